//! The terminal table: one column per implementation, one row per metric, so the
//! implementations read side by side. Then the verdict: PASS, or FAIL with each reason.

use std::fmt::Write as _;

use crate::report::json::{CostsJson, Report, ResultJson};
use crate::slowest::SLOW_NS;
use crate::units::{count, fine_ns, human_ns, si};

/// A cost in ns, or `<1ns` (below `resolution_ns`) when the call was too short to see.
pub(crate) fn cost_ns(v: u64, resolution_ns: f64) -> String {
    if (v as f64) < resolution_ns {
        format!("<{}", human_ns(resolution_ns.ceil()))
    } else {
        human_ns(v as f64)
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
/// Narrowest column; wider when a cell needs it.
const COLUMN: usize = 14;

/// Rows of cells, laid out once every row is known so each column fits its widest cell.
#[derive(Default)]
struct Grid {
    rows: Vec<(String, Vec<String>)>,
}

impl Grid {
    fn row(&mut self, label: &str, results: &[ResultJson], cell: impl Fn(&ResultJson) -> String) {
        self.rows
            .push((label.to_string(), results.iter().map(cell).collect()));
    }

    fn render(&self, out: &mut String) {
        let columns = self.rows.first().map_or(0, |(_, cells)| cells.len());
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .map(|(_, cells)| cells[c].chars().count() + 2)
                    .max()
                    .unwrap_or(0)
                    .max(COLUMN)
            })
            .collect();
        for (i, (label, cells)) in self.rows.iter().enumerate() {
            let _ = write!(out, "{label:<LABEL$}");
            for (cell, width) in cells.iter().zip(&widths) {
                let _ = write!(out, "{cell:>width$}");
            }
            out.push('\n');
            if i == 0 {
                let _ = writeln!(out, "{}", "-".repeat(LABEL + widths.iter().sum::<usize>()));
            }
        }
    }
}

/// The line saying which lateness the table shows: on the virtual clock, the charged pass's
/// (each call at its minimum cost over the repetitions) or as measured; on the real clock, as
/// measured, next to the machine's 1-minute load average.
fn shown_lateness(report: &Report) -> String {
    let load = |l: Option<f64>| l.map_or("unknown".into(), |l| format!("{l:.2}"));
    let results = &report.results;
    if report.clock != "virtual" {
        let (start, end) = report
            .context
            .as_ref()
            .map_or((None, None), |c| (c.load_start, c.load_end));
        return format!(
            "lateness shown: as measured on the real clock, the machine's preemptions included \
             (load average, 1 min: {} at the start, {} at the end)",
            load(start),
            load(end)
        );
    }
    if report.workload.lateness == "ticks" {
        return "lateness shown: in ticks, which no call cost changes".into();
    }
    if !results.is_empty() && results.iter().all(ResultJson::lateness_is_min_cost) {
        // `replay` always shows the min-cost lateness; `compare` and `run` can show the other.
        let other = if report.command == "replay" {
            "report.json keeps the lateness as measured too"
        } else {
            "as measured: --lateness-costs measured; report.json keeps both"
        };
        format!(
            "lateness shown: min-cost, the timer's own: a last pass of the same calls, each \
             charged its fastest of the {} repetitions, so the machine's preemptions are left out \
             ({other})",
            report.timing.repeat
        )
    } else if results.iter().any(|r| r.lateness_min_cost.is_some()) {
        "lateness shown: as measured, each repetition's own call costs, the machine's \
         preemptions included (--lateness-costs measured; the min-cost row is the timer's own)"
            .into()
    } else {
        "lateness shown: as measured, each call's own cost, the machine's preemptions included \
         (--repeat 2 or more adds the timer's own, each call at its fastest repetition)"
            .into()
    }
}

/// Renders the table and verdict for `report`.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    let w = &report.workload;
    let results = &report.results;
    let _ = writeln!(
        out,
        "tickwheel-loadgen {}, {} clock: {}",
        report.command,
        report.clock,
        w.describe()
    );
    if let Some(context) = &report.context {
        let _ = writeln!(out, "{}", context.line());
    }
    let t = &report.timing;
    let _ = writeln!(
        out,
        "cost: every call timed by the cycle counter (resolution {}, overhead {:.1}ns \
         subtracted); per call p50/p99: {} runs of {} identical calls on the final state, \
         resolution {:.2}ns; ops/s = timer calls per second spent inside the timer",
        human_ns(t.resolution_ns),
        t.overhead_ns,
        t.runs_per_op,
        t.calls_per_run,
        t.run_resolution_ns
    );
    let _ = writeln!(
        out,
        "lateness: {}; {} repetition{} of each implementation, interleaved; figures are medians",
        match (report.clock.as_str(), w.lateness.as_str()) {
            ("virtual", "ticks") => "poll tick minus deadline tick".to_string(),
            ("virtual", _) => format!(
                "when the loop hands the timer over minus its deadline (call costs{} charged)",
                if w.handler_cost_ns > 0 {
                    format!(" and {} per event", human_ns(w.handler_cost_ns as f64))
                } else {
                    String::new()
                }
            ),
            _ => "when poll returned the timer minus its deadline, real clock".to_string(),
        },
        t.repeat,
        if t.repeat == 1 { "" } else { "s" }
    );
    let _ = writeln!(out, "{}\n", shown_lateness(report));
    let mut grid = Grid::default();
    let mut row = |label: &str, results: &[ResultJson], cell: &dyn Fn(&ResultJson) -> String| {
        grid.row(label, results, cell);
    };
    row("", results, &ResultJson::label);
    row("timer ops/s", results, &|r| si(r.ops_per_sec));
    row("scheduled (inserts)", results, &|r| count(r.scheduled));
    row("reset", results, &|r| count(r.reset));
    row("cancelled", results, &|r| count(r.cancelled));
    row("fired", results, &|r| count(r.fired));
    if w.trace.is_none() {
        row("  idle / request timeouts", results, &|r| {
            format!(
                "{} / {}",
                si(r.idle_fired as f64),
                si(r.request_fired as f64)
            )
        });
    }
    if results.iter().any(|r| r.drained > 0) {
        row("drained", results, &|r| count(r.drained));
    }
    row("early fires (must be 0)", results, &|r| {
        count(r.early_fires)
    });
    row("overdue at end", results, &|r| count(r.overdue_at_end));
    row("pending at end", results, &|r| count(r.pending_at_end));
    for op in CostsJson::OPS {
        row(&format!("{op} per call p50/p99"), results, &|r| {
            let c = r.cost.get(op).copied().unwrap_or_default();
            if c.runs_p50 <= 0.0 {
                return "n/a".into();
            }
            format!("{} / {}", fine_ns(c.runs_p50), fine_ns(c.runs_p99))
        });
    }
    for op in CostsJson::OPS {
        row(&format!("{op} single call p99/max"), results, &|r| {
            let c = r.cost.get(op).copied().unwrap_or_default();
            if c.samples == 0 {
                return "n/a".into();
            }
            let below = report.timing.resolution_ns;
            format!("{} / {}", cost_ns(c.p99, below), cost_ns(c.max, below))
        });
    }
    if results.iter().any(|r| r.slowest_call.is_some()) {
        row(
            &format!("slowest call, fastest of {}", t.repeat),
            results,
            &|r| {
                r.slowest_call.map_or("n/a".into(), |s| match s.slowest() {
                    (_, 0) => format!("<{}", human_ns(SLOW_NS as f64)),
                    (op, ns) => format!("{op} {}", human_ns(ns as f64)),
                })
            },
        );
    }
    let late = |v: u64| human_ns(v as f64);
    let label = |p: &str| format!("lateness {p}");
    row(&label("p50"), results, &|r| {
        late(r.lateness.percentiles.p50)
    });
    row(&label("p90"), results, &|r| {
        late(r.lateness.percentiles.p90)
    });
    row(&label("p99"), results, &|r| {
        late(r.lateness.percentiles.p99)
    });
    row(&label("p99.9"), results, &|r| {
        late(r.lateness.percentiles.p999)
    });
    row(&label("p99.99"), results, &|r| {
        late(r.lateness.percentiles.p9999)
    });
    row(&label("max"), results, &|r| {
        late(r.lateness.percentiles.max)
    });
    if results.iter().any(|r| r.lateness_min_cost.is_some()) {
        let min = results.iter().all(ResultJson::lateness_is_min_cost);
        let other = |r: &ResultJson| {
            if min {
                r.lateness_measured.as_ref()
            } else {
                r.lateness_min_cost.as_ref()
            }
            .map_or("n/a".into(), |l| late(l.percentiles.p999))
        };
        let label = if min {
            "  p99.9 as measured"
        } else {
            "  p99.9 min-cost"
        };
        row(label, results, &other);
    }
    row("lateness clamped (> 1h)", results, &|r| {
        count(r.lateness.clamped)
    });
    row("peak RSS", results, &|r| {
        r.peak_rss_bytes.map_or("n/a".into(), bytes)
    });
    row("bytes per live timer", results, &|r| {
        if r.threads.is_some() {
            "n/a".into()
        } else {
            format!("{:.1}", r.bytes_per_timer)
        }
    });
    row("peak live timers", results, &|r| count(r.peak_live));
    row("most work in one call", results, &|r| {
        count(r.work.max_call_work)
    });
    if report.clock == "real" {
        row("target / achieved req/s", results, &|r| {
            format!("{} / {}", si(r.target_rate), si(r.achieved_rate))
        });
        row("arrival lag p99 / max", results, &|r| {
            let lag = r.arrival_lag.clone().unwrap_or_default();
            format!(
                "{} / {}",
                human_ns(lag.percentiles.p99 as f64),
                human_ns(lag.percentiles.max as f64)
            )
        });
    }
    row("wall time", results, &|r| human_ns(r.wall_secs * 1e9));
    grid.render(&mut out);
    out.push('\n');
    for r in results {
        if r.arrivals < r.arrivals_intended {
            let _ = writeln!(
                out,
                "note: {} fell behind: handled {} of {} requests ({} req/s achieved, {} targeted)",
                r.label(),
                count(r.arrivals),
                count(r.arrivals_intended),
                si(r.achieved_rate),
                si(r.target_rate)
            );
        }
    }
    out.push_str(&crate::report::pick::render(report));
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
