//! The CI gate: thresholds from the command line (parsed in [`thresholds`](crate::thresholds)),
//! and the checks every run must pass.
//!
//! A run fails (exit 1) when any of these holds; the table lists each failure:
//! - a timer fired early (always checked);
//! - the accounting does not balance: scheduled ≠ fired + cancelled + drained + overdue +
//!   pending (always);
//! - on the virtual clock, implementations or repetitions disagree on scheduled / cancelled /
//!   reset / fired counts for the same seed (always);
//! - a `--max-lateness PCT=DURATION` or `--max-cost OP.STAT=DURATION` line is crossed (by the
//!   headline figure: the median over the repetitions, the charged pass's min-cost lateness,
//!   or each call at its fastest repetition for `slowest`).

use crate::report::json::{RepetitionJson, Report, ResultJson};
use crate::thresholds::{CostStat, Threshold, Thresholds};
use crate::units::{human_ns, nanos};

/// Every failure of a run, as sentences for the table and the JSON.
pub(crate) fn failures(report: &Report, thresholds: &Thresholds) -> Vec<String> {
    let mut out = Vec::new();
    for r in &report.results {
        if r.early_fires > 0 {
            out.push(format!(
                "{}: {} early fires (must be 0)",
                r.label(),
                r.early_fires
            ));
        }
        let ended = r.fired + r.cancelled + r.drained + r.overdue_at_end + r.pending_at_end;
        if r.scheduled != ended {
            out.push(format!(
                "{}: scheduled {} != fired + cancelled + drained + overdue + pending = {ended}",
                r.label(),
                r.scheduled
            ));
        }
        for line in &thresholds.lines {
            if let Some(message) = crossed(r, line) {
                out.push(message);
            }
        }
    }
    if report.clock == "virtual" {
        for r in &report.results {
            let counts = |x: &RepetitionJson| (x.scheduled, x.cancelled, x.reset, x.fired);
            if let Some(first) = r.repetitions.first() {
                if let Some(other) = r.repetitions.iter().find(|x| counts(x) != counts(first)) {
                    out.push(format!(
                        "counts differ between repetitions of {} on the same seed: \
                         scheduled/cancelled/reset/fired = {:?} and {:?}",
                        r.label(),
                        counts(first),
                        counts(other)
                    ));
                }
            }
        }
        if let Some(first) = report.results.first() {
            let counts = |r: &ResultJson| (r.scheduled, r.cancelled, r.reset, r.fired);
            for r in &report.results[1..] {
                if counts(r) != counts(first) {
                    out.push(format!(
                        "counts differ for the same seed: {} scheduled/cancelled/reset/fired = \
                         {:?}, {} = {:?}",
                        first.timer,
                        counts(first),
                        r.label(),
                        counts(r)
                    ));
                }
            }
        }
    }
    out
}

fn crossed(r: &ResultJson, line: &Threshold) -> Option<String> {
    match line {
        Threshold::Lateness { label, stat, limit } => {
            let each = r.lateness.percentiles.each();
            let (.., ns) = each.into_iter().find(|p| p.0 == *stat)?;
            (ns > nanos(*limit)).then(|| {
                format!(
                    "{}: lateness {} crossed --max-lateness {label}",
                    r.label(),
                    human_ns(ns as f64)
                )
            })
        }
        Threshold::Cost {
            label,
            op,
            stat,
            limit,
        } => {
            let ns = match stat {
                CostStat::Slowest => {
                    let Some(slowest) = r.slowest_call else {
                        return Some(format!(
                            "{}: no slowest call to judge --max-cost {label} by (the \
                             repetitions did not make the same calls)",
                            r.label()
                        ));
                    };
                    slowest.get(op)?
                }
                stat => {
                    let cost = r.cost.get(op)?;
                    match stat {
                        CostStat::P50 => cost.p50,
                        CostStat::P99 => cost.p99,
                        _ => cost.max,
                    }
                }
            };
            (ns > nanos(*limit)).then(|| {
                format!(
                    "{}: {op} cost {} crossed --max-cost {label}",
                    r.label(),
                    human_ns(ns as f64)
                )
            })
        }
    }
}
