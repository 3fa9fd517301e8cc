//! The threshold lines of `--max-lateness` and `--max-cost`: parsed, and checked against the
//! run's settings, before any load; the gate then judges each report by them.

use std::time::Duration;

use crate::error::Error;
use crate::slowest::SLOW_NS;
use crate::units::{human_ns, nanos, parse_duration};

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
        /// Which percentile: its key in the report (`p999` for `p99.9`).
        stat: &'static str,
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
            let stat = match stat.trim() {
                "p50" => "p50",
                "p90" => "p90",
                "p99" => "p99",
                "p99.9" | "p999" => "p999",
                "p99.99" | "p9999" => "p9999",
                "max" => "max",
                _ => return Err(bad()),
            };
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
                    human_ns(SLOW_NS as f64)
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
                stat: "p999",
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
