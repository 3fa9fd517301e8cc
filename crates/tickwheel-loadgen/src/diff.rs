//! `diff`: compare two `report.json` files, per implementation and metric.
//!
//! For each implementation present in both reports it prints the baseline value, the current
//! value and their ratio (current / baseline), and marks a **regression** when the current value
//! is worse by more than the tolerance: higher for costs, lateness and memory, lower for
//! throughput. Early fires are a regression whenever they rise above 0. A ratio against a
//! baseline of 0 is shown as `n/a` and not judged (except early fires).

use std::fmt::Write as _;

use crate::report::json::{Report, ResultJson};
use crate::report::table::human_ns;

/// Which direction is better for a metric.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Better {
    Lower,
    Higher,
}

/// One compared metric.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    /// Implementation.
    pub(crate) timer: String,
    /// Metric name, e.g. `lateness.p99`.
    pub(crate) metric: String,
    /// Baseline value.
    pub(crate) baseline: f64,
    /// Current value.
    pub(crate) current: f64,
    /// current / baseline, when the baseline is not 0.
    pub(crate) ratio: Option<f64>,
    /// Worse than the tolerance allows.
    pub(crate) regression: bool,
}

fn metrics(r: &ResultJson) -> Vec<(String, f64, Better)> {
    let l = &r.lateness.percentiles;
    let mut out = vec![
        ("ops_per_sec".to_string(), r.ops_per_sec, Better::Higher),
        ("early_fires".into(), r.early_fires as f64, Better::Lower),
        (
            "overdue_at_end".into(),
            r.overdue_at_end as f64,
            Better::Lower,
        ),
        ("lateness.p50".into(), l.p50 as f64, Better::Lower),
        ("lateness.p90".into(), l.p90 as f64, Better::Lower),
        ("lateness.p99".into(), l.p99 as f64, Better::Lower),
        ("lateness.p999".into(), l.p999 as f64, Better::Lower),
        ("lateness.p9999".into(), l.p9999 as f64, Better::Lower),
        ("lateness.max".into(), l.max as f64, Better::Lower),
    ];
    for op in ["insert", "cancel", "reset", "fire"] {
        if let Some(c) = r.cost.get(op) {
            out.push((format!("cost.{op}.p50"), c.p50 as f64, Better::Lower));
            out.push((format!("cost.{op}.p99"), c.p99 as f64, Better::Lower));
        }
    }
    out.push((
        "peak_rss_bytes".into(),
        r.peak_rss_bytes.unwrap_or(0) as f64,
        Better::Lower,
    ));
    out.push(("bytes_per_timer".into(), r.bytes_per_timer, Better::Lower));
    out
}

/// Compares `current` against `baseline` with relative `tolerance`.
pub(crate) fn compare(baseline: &Report, current: &Report, tolerance: f64) -> Vec<Line> {
    let mut lines = Vec::new();
    for cur in &current.results {
        let Some(base) = baseline
            .results
            .iter()
            .find(|b| b.timer == cur.timer && b.clock == cur.clock && b.threads == cur.threads)
        else {
            continue;
        };
        for ((metric, b, better), (_, c, _)) in metrics(base).into_iter().zip(metrics(cur)) {
            let ratio = (b != 0.0).then(|| c / b);
            let regression = if metric == "early_fires" {
                c > 0.0
            } else {
                match (ratio, better) {
                    (Some(ratio), Better::Lower) => ratio > 1.0 + tolerance,
                    (Some(ratio), Better::Higher) => ratio < 1.0 - tolerance,
                    (None, _) => false,
                }
            };
            lines.push(Line {
                timer: cur.label(),
                metric,
                baseline: b,
                current: c,
                ratio,
                regression,
            });
        }
    }
    lines
}

fn value(metric: &str, unit: &str, v: f64) -> String {
    if metric.starts_with("cost.") || (metric.starts_with("lateness.") && unit == "ns") {
        human_ns(v)
    } else if metric.starts_with("lateness.") {
        format!("{v} ticks")
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Renders the comparison as a table.
pub(crate) fn render(lines: &[Line], current: &Report, tolerance: f64) -> String {
    let unit = current
        .results
        .first()
        .map_or("ns", |r| r.lateness.unit.as_str());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<14}{:<20}{:>14}{:>14}{:>9}  (regression: worse by more than {:.0} %)",
        "timer",
        "metric",
        "baseline",
        "current",
        "ratio",
        tolerance * 100.0
    );
    for l in lines {
        let _ = writeln!(
            out,
            "{:<14}{:<20}{:>14}{:>14}{:>9}  {}",
            l.timer,
            l.metric,
            value(&l.metric, unit, l.baseline),
            value(&l.metric, unit, l.current),
            l.ratio.map_or("n/a".into(), |r| format!("{r:.2}")),
            if l.regression { "REGRESSION" } else { "" }
        );
    }
    let regressions = lines.iter().filter(|l| l.regression).count();
    if lines.is_empty() {
        let _ = writeln!(out, "no implementation appears in both reports");
    } else if regressions == 0 {
        let _ = writeln!(out, "no regressions");
    } else {
        let _ = writeln!(out, "{regressions} regressions");
    }
    out
}
