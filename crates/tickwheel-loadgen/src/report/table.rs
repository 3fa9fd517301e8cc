//! The terminal table: one column per implementation, one row per metric, so the
//! implementations read side by side. Then the verdict: PASS, or FAIL with each reason.

use std::fmt::Write as _;

use crate::report::json::{Report, ResultJson};

/// `v` nanoseconds with three significant digits and a unit: `87ns`, `1.23µs`, `45.6ms`, `2.10s`.
pub(crate) fn human_ns(v: f64) -> String {
    let (value, unit) = if v < 1e3 {
        return format!("{v:.0}ns");
    } else if v < 1e6 {
        (v / 1e3, "µs")
    } else if v < 1e9 {
        (v / 1e6, "ms")
    } else {
        (v / 1e9, "s")
    };
    if value < 10.0 {
        format!("{value:.2}{unit}")
    } else if value < 100.0 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.0}{unit}")
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

fn bytes(v: u64) -> String {
    let v = v as f64;
    if v >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", v / (1024.0 * 1024.0 * 1024.0))
    } else if v >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", v / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KiB", v / 1024.0)
    }
}

const LABEL: usize = 30;
const COLUMN: usize = 22;

fn row(
    out: &mut String,
    label: &str,
    results: &[ResultJson],
    cell: impl Fn(&ResultJson) -> String,
) {
    let _ = write!(out, "{label:<LABEL$}");
    for r in results {
        let _ = write!(out, "{:>COLUMN$}", cell(r));
    }
    out.push('\n');
}

/// Renders the table and verdict for `report`.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    let w = &report.workload;
    let results = &report.results;
    let _ = writeln!(
        out,
        "tickwheel-loadgen {}, {} clock: {} connections, {} req/s for {}, idle timeout {}, request \
         timeout {}, {}% slow, tick {}, seed {}",
        report.command,
        report.clock,
        count(u64::from(w.connections)),
        si(w.rate),
        human_ns(w.duration_secs * 1e9),
        human_ns(w.idle_timeout_secs * 1e9),
        human_ns(w.request_timeout_secs * 1e9),
        w.slow_fraction * 100.0,
        human_ns(w.tick_ns as f64),
        w.seed
    );
    let _ = writeln!(
        out,
        "cost: 1 call in {} timed per operation, {} clock overhead subtracted; ops/s = timer calls \
         per second spent inside the timer\n",
        report.timing.sample_every,
        human_ns(report.timing.clock_overhead_ns as f64)
    );
    row(&mut out, "", results, |r| r.timer.clone());
    let _ = writeln!(out, "{}", "-".repeat(LABEL + COLUMN * results.len()));
    row(&mut out, "timer ops/s", results, |r| si(r.ops_per_sec));
    row(&mut out, "scheduled (inserts)", results, |r| {
        count(r.scheduled)
    });
    row(&mut out, "reset", results, |r| count(r.reset));
    row(&mut out, "cancelled", results, |r| count(r.cancelled));
    row(&mut out, "fired", results, |r| count(r.fired));
    row(&mut out, "  idle / request timeouts", results, |r| {
        format!(
            "{} / {}",
            si(r.idle_fired as f64),
            si(r.request_fired as f64)
        )
    });
    row(&mut out, "early fires (must be 0)", results, |r| {
        count(r.early_fires)
    });
    row(&mut out, "overdue at end", results, |r| {
        count(r.overdue_at_end)
    });
    row(&mut out, "pending at end", results, |r| {
        count(r.pending_at_end)
    });
    for op in ["insert", "cancel", "reset", "fire"] {
        row(&mut out, &format!("{op} cost p50/p99/max"), results, |r| {
            let c = r.cost.get(op).copied().unwrap_or_default();
            format!(
                "{}/{}/{}",
                human_ns(c.p50 as f64),
                human_ns(c.p99 as f64),
                human_ns(c.max as f64)
            )
        });
    }
    let unit = results.first().map_or("ns", |r| r.lateness.unit.as_str());
    let late = |v: u64| {
        if unit == "ticks" {
            format!("{v} ticks")
        } else {
            human_ns(v as f64)
        }
    };
    let label = |p: &str| format!("lateness {p}");
    row(&mut out, &label("p50"), results, |r| {
        late(r.lateness.percentiles.p50)
    });
    row(&mut out, &label("p90"), results, |r| {
        late(r.lateness.percentiles.p90)
    });
    row(&mut out, &label("p99"), results, |r| {
        late(r.lateness.percentiles.p99)
    });
    row(&mut out, &label("p99.9"), results, |r| {
        late(r.lateness.percentiles.p999)
    });
    row(&mut out, &label("p99.99"), results, |r| {
        late(r.lateness.percentiles.p9999)
    });
    row(&mut out, &label("max"), results, |r| {
        late(r.lateness.percentiles.max)
    });
    row(&mut out, "lateness clamped (> 1h)", results, |r| {
        count(r.lateness.clamped)
    });
    row(&mut out, "peak RSS", results, |r| {
        r.peak_rss_bytes.map_or("n/a".into(), bytes)
    });
    row(&mut out, "bytes per live timer", results, |r| {
        format!("{:.1}", r.bytes_per_timer)
    });
    row(&mut out, "peak live timers", results, |r| {
        count(r.peak_live)
    });
    if report.clock == "real" {
        row(&mut out, "target / achieved req/s", results, |r| {
            format!("{} / {}", si(r.target_rate), si(r.achieved_rate))
        });
        row(&mut out, "arrival lag p99 / max", results, |r| {
            let lag = r.arrival_lag.clone().unwrap_or_default();
            format!(
                "{} / {}",
                human_ns(lag.percentiles.p99 as f64),
                human_ns(lag.percentiles.max as f64)
            )
        });
    }
    row(&mut out, "wall time", results, |r| {
        human_ns(r.wall_secs * 1e9)
    });
    out.push('\n');
    for r in results {
        if r.arrivals < r.arrivals_intended {
            let _ = writeln!(
                out,
                "note: {} fell behind: handled {} of {} requests ({} req/s achieved, {} targeted)",
                r.timer,
                count(r.arrivals),
                count(r.arrivals_intended),
                si(r.achieved_rate),
                si(r.target_rate)
            );
        }
    }
    if report.failures.is_empty() {
        let _ = writeln!(out, "PASS");
    } else {
        let _ = writeln!(out, "FAIL");
        for failure in &report.failures {
            let _ = writeln!(out, "  - {failure}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(human_ns(0.0), "0ns");
        assert_eq!(human_ns(87.0), "87ns");
        assert_eq!(human_ns(1234.0), "1.23µs");
        assert_eq!(human_ns(45_600_000.0), "45.6ms");
        assert_eq!(human_ns(30e9), "30.0s");
        assert_eq!(count(6_012_345), "6,012,345");
        assert_eq!(count(12), "12");
        assert_eq!(si(45_200_000.0), "45.2M");
    }
}
