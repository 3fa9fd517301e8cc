//! The CI gate: thresholds from the command line, and the checks every run must pass.
//!
//! A run fails (exit 1) when any of these holds; the table lists each failure:
//! - a timer fired early (always checked);
//! - the accounting does not balance: scheduled ≠ fired + cancelled + drained + overdue +
//!   pending (always);
//! - on the virtual clock, implementations or repetitions disagree on scheduled / cancelled /
//!   reset / fired counts for the same seed (always);
//! - a `--max-lateness PCT=DURATION` or `--max-cost OP.STAT=DURATION` line is crossed (by the
//!   median over the repetitions).

use std::time::Duration;

use crate::args::parse_duration;
use crate::config::nanos;
use crate::error::Error;
use crate::report::json::{Percentiles, RepetitionJson, Report, ResultJson};
use crate::slowest::SLOW_NS;

/// A lateness statistic a threshold can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LatenessStat {
    /// Median.
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// 99.99th percentile.
    P9999,
    /// Largest value.
    Max,
}

impl LatenessStat {
    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "p50" => Self::P50,
            "p90" => Self::P90,
            "p99" => Self::P99,
            "p99.9" | "p999" => Self::P999,
            "p99.99" | "p9999" => Self::P9999,
            "max" => Self::Max,
            _ => return None,
        })
    }

    fn of(self, p: &Percentiles) -> u64 {
        match self {
            Self::P50 => p.p50,
            Self::P90 => p.p90,
            Self::P99 => p.p99,
            Self::P999 => p.p999,
            Self::P9999 => p.p9999,
            Self::Max => p.max,
        }
    }
}

/// A cost statistic a threshold can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CostStat {
    /// Median.
    P50,
    /// 99th percentile.
    P99,
    /// Largest sample.
    Max,
    /// The slowest call with each call at its fastest repetition (virtual clock, two
    /// repetitions or more; see [`slowest`](crate::slowest)).
    Slowest,
}

/// One threshold line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Threshold {
    /// Lateness statistic at most this long.
    Lateness {
        /// The flag as written, for messages.
        label: String,
        /// Which statistic.
        stat: LatenessStat,
        /// The line.
        limit: Duration,
    },
    /// Cost of one operation at most this long.
    Cost {
        /// The flag as written, for messages.
        label: String,
        /// insert, cancel, reset or fire.
        op: String,
        /// Which statistic.
        stat: CostStat,
        /// The line.
        limit: Duration,
    },
}

/// Every threshold of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Thresholds {
    /// In the order given.
    pub(crate) lines: Vec<Threshold>,
}

impl Thresholds {
    /// Parses `--max-lateness` and `--max-cost` values.
    ///
    /// # Errors
    /// [`Error::Input`] naming the value and the accepted form.
    pub(crate) fn parse(lateness: &[String], cost: &[String]) -> Result<Self, Error> {
        let mut lines = Vec::new();
        for text in lateness {
            let bad = || {
                Error::Input(format!(
                    "--max-lateness `{text}`: expected PCT=DURATION with PCT one of p50, p90, \
                     p99, p99.9, p99.99, max (e.g. p99.9=5ms)"
                ))
            };
            let (stat, limit) = text.split_once('=').ok_or_else(bad)?;
            let stat = LatenessStat::parse(stat.trim()).ok_or_else(bad)?;
            let limit = parse_duration(limit)
                .map_err(|e| Error::Input(format!("--max-lateness `{text}`: {e}")))?;
            lines.push(Threshold::Lateness {
                label: text.clone(),
                stat,
                limit,
            });
        }
        for text in cost {
            let bad = || {
                Error::Input(format!(
                    "--max-cost `{text}`: expected OP.STAT=DURATION with OP one of insert, \
                     cancel, reset, fire and STAT one of p50, p99, max, slowest (e.g. \
                     insert.p99=200ns), or idle.slowest"
                ))
            };
            let (name, limit) = text.split_once('=').ok_or_else(bad)?;
            let (op, stat) = name.trim().split_once('.').ok_or_else(bad)?;
            let stat = match stat {
                "p50" => CostStat::P50,
                "p99" => CostStat::P99,
                "max" => CostStat::Max,
                "slowest" => CostStat::Slowest,
                _ => return Err(bad()),
            };
            let ops: &[&str] = match stat {
                CostStat::Slowest => &["insert", "cancel", "reset", "fire", "idle"],
                _ => &["insert", "cancel", "reset", "fire"],
            };
            if !ops.contains(&op) {
                return Err(bad());
            }
            let limit = parse_duration(limit)
                .map_err(|e| Error::Input(format!("--max-cost `{text}`: {e}")))?;
            if stat == CostStat::Slowest && nanos(limit) < SLOW_NS {
                return Err(Error::Input(format!(
                    "--max-cost `{text}`: `slowest` keeps only calls of {} or more, so its line \
                     must be at least that",
                    crate::report::table::human_ns(SLOW_NS as f64)
                )));
            }
            lines.push(Threshold::Cost {
                label: text.clone(),
                op: op.to_string(),
                stat,
                limit,
            });
        }
        Ok(Self { lines })
    }

    /// Refuses a `slowest` line unless the run is deterministic and repeated: it compares
    /// each call across repetitions.
    ///
    /// # Errors
    /// [`Error::Input`] naming the line.
    pub(crate) fn check_repeatable(&self, deterministic: bool, repeat: u32) -> Result<(), Error> {
        let slowest = self.lines.iter().find_map(|line| match line {
            Threshold::Cost {
                label,
                stat: CostStat::Slowest,
                ..
            } => Some(label),
            _ => None,
        });
        match slowest {
            Some(label) if !deterministic || repeat < 2 => Err(Error::Input(format!(
                "--max-cost `{label}`: `slowest` compares every call across repetitions, so it \
                 needs the virtual clock (no --clock real, no --service) and --repeat 2 or more"
            ))),
            _ => Ok(()),
        }
    }
}

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
            let ns = stat.of(&r.lateness.percentiles);
            (ns > nanos(*limit)).then(|| {
                format!(
                    "{}: lateness {} crossed --max-lateness {label}",
                    r.label(),
                    crate::report::table::human_ns(ns as f64)
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
                    crate::report::table::human_ns(ns as f64)
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_refuses_bad_ones() {
        let t = Thresholds::parse(
            &["p99.9=5ms".into(), "max=1s".into()],
            &["insert.p99=200ns".into()],
        )
        .unwrap();
        assert_eq!(t.lines.len(), 3);
        assert_eq!(
            t.lines[0],
            Threshold::Lateness {
                label: "p99.9=5ms".into(),
                stat: LatenessStat::P999,
                limit: Duration::from_millis(5)
            }
        );
        for bad in ["p42=1ms", "p99", "p99=fast", "p99=5"] {
            assert!(Thresholds::parse(&[bad.into()], &[]).is_err(), "{bad}");
        }
        for bad in [
            "insert=1ms",
            "sort.p99=1ms",
            "insert.p90=1ms",
            "insert.p99=1",
            "idle.p99=1ms",
            "fire.slowest=999ns",
        ] {
            assert!(Thresholds::parse(&[], &[bad.into()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_slowest_line_needs_repeated_deterministic_runs() {
        let t = Thresholds::parse(&[], &["idle.slowest=50us".into()]).unwrap();
        assert_eq!(
            t.lines[0],
            Threshold::Cost {
                label: "idle.slowest=50us".into(),
                op: "idle".into(),
                stat: CostStat::Slowest,
                limit: Duration::from_micros(50)
            }
        );
        assert!(t.check_repeatable(true, 2).is_ok());
        for (deterministic, repeat) in [(true, 1), (false, 3)] {
            let err = t.check_repeatable(deterministic, repeat).unwrap_err();
            assert!(err.to_string().contains("idle.slowest=50us"), "{err}");
        }
        let other = Thresholds::parse(&[], &["fire.max=50us".into()]).unwrap();
        assert!(other.check_repeatable(false, 1).is_ok());
    }
}
