//! The terminal table: one column per implementation, one row per metric, so the
//! implementations read side by side. Then the verdict: PASS, or FAIL with each reason.

use std::fmt::Write as _;

use crate::report::json::{CostsJson, Percentiles, Report, ResultJson};
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

/// The lines above the table: the workload, the machine, how cost and lateness were measured.
fn header(report: &Report, out: &mut String) {
    let (w, t) = (&report.workload, &report.timing);
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
    let handler = if w.handler_cost_ns > 0 {
        format!(" and {} per event", human_ns(w.handler_cost_ns as f64))
    } else {
        String::new()
    };
    let lateness = match (report.clock.as_str(), w.lateness.as_str()) {
        ("virtual", "ticks") => "poll tick minus deadline tick".to_string(),
        ("virtual", _) => format!(
            "when the loop hands the timer over minus its deadline (call costs{handler} charged)"
        ),
        _ => "when poll returned the timer minus its deadline, real clock".to_string(),
    };
    let _ = writeln!(
        out,
        "lateness: {lateness}; {} repetition{} of each implementation, interleaved; figures are \
         medians",
        t.repeat,
        if t.repeat == 1 { "" } else { "s" }
    );
    let _ = writeln!(out, "{}\n", shown_lateness(report));
}

/// The rows of per-operation costs, and of the slowest call when the report has it.
fn cost_rows(report: &Report, grid: &mut Grid) {
    let results = &report.results;
    for op in CostsJson::OPS {
        grid.row(&format!("{op} per call p50/p99"), results, |r| {
            let c = r.cost.get(op).copied().unwrap_or_default();
            if c.runs_p50 <= 0.0 {
                return "n/a".into();
            }
            format!("{} / {}", fine_ns(c.runs_p50), fine_ns(c.runs_p99))
        });
    }
    for op in CostsJson::OPS {
        grid.row(&format!("{op} single call p99/max"), results, |r| {
            let c = r.cost.get(op).copied().unwrap_or_default();
            if c.samples == 0 {
                return "n/a".into();
            }
            let below = report.timing.resolution_ns;
            format!("{} / {}", cost_ns(c.p99, below), cost_ns(c.max, below))
        });
    }
    if results.iter().any(|r| r.slowest_call.is_some()) {
        let label = format!("slowest call, fastest of {}", report.timing.repeat);
        grid.row(&label, results, |r| {
            r.slowest_call.map_or("n/a".into(), |s| match s.slowest() {
                (_, 0) => format!("<{}", human_ns(SLOW_NS as f64)),
                (op, ns) => format!("{op} {}", human_ns(ns as f64)),
            })
        });
    }
}

/// The lateness rows: the headline's percentiles, and the other view's p99.9 when there is one.
fn lateness_rows(results: &[ResultJson], grid: &mut Grid) {
    let late = |v: u64| human_ns(v as f64);
    for (i, (_, name, ..)) in Percentiles::default().each().into_iter().enumerate() {
        grid.row(&format!("lateness {name}"), results, |r| {
            late(r.lateness.percentiles.each()[i].3)
        });
    }
    if results.iter().any(|r| r.lateness_min_cost.is_some()) {
        let min = results.iter().all(ResultJson::lateness_is_min_cost);
        let label = if min {
            "  p99.9 as measured"
        } else {
            "  p99.9 min-cost"
        };
        grid.row(label, results, |r| {
            let other = if min {
                &r.lateness_measured
            } else {
                &r.lateness_min_cost
            };
            other
                .as_ref()
                .map_or("n/a".into(), |l| late(l.percentiles.p999))
        });
    }
    grid.row("lateness clamped (> 1h)", results, |r| {
        count(r.lateness.clamped)
    });
}

/// Every row of the table.
fn grid(report: &Report) -> Grid {
    let results = &report.results;
    let mut grid = Grid::default();
    grid.row("", results, ResultJson::label);
    grid.row("timer ops/s", results, |r| si(r.ops_per_sec));
    grid.row("scheduled (inserts)", results, |r| count(r.scheduled));
    grid.row("reset", results, |r| count(r.reset));
    grid.row("cancelled", results, |r| count(r.cancelled));
    grid.row("fired", results, |r| count(r.fired));
    if report.workload.trace.is_none() {
        grid.row("  idle / request timeouts", results, |r| {
            format!(
                "{} / {}",
                si(r.idle_fired as f64),
                si(r.request_fired as f64)
            )
        });
    }
    if results.iter().any(|r| r.drained > 0) {
        grid.row("drained", results, |r| count(r.drained));
    }
    grid.row("early fires (must be 0)", results, |r| count(r.early_fires));
    grid.row("overdue at end", results, |r| count(r.overdue_at_end));
    grid.row("pending at end", results, |r| count(r.pending_at_end));
    cost_rows(report, &mut grid);
    lateness_rows(results, &mut grid);
    grid.row("peak RSS", results, |r| {
        r.peak_rss_bytes.map_or("n/a".into(), bytes)
    });
    // Grown: the charged pass's, on storage grown as needed (what the timers use); else the
    // repetitions', on storage preallocated for the workload.
    let memory = if results.iter().all(|r| r.bytes_grown) {
        "bytes per live timer"
    } else {
        "bytes per live timer (preallocated)"
    };
    grid.row(memory, results, |r| {
        if r.threads.is_some() {
            "n/a".into()
        } else {
            format!("{:.1}", r.bytes_per_timer)
        }
    });
    grid.row("peak live timers", results, |r| count(r.peak_live));
    grid.row("most work in one call", results, |r| {
        count(r.work.max_call_work)
    });
    if report.clock == "real" {
        grid.row("target / achieved req/s", results, |r| {
            format!("{} / {}", si(r.target_rate), si(r.achieved_rate))
        });
        grid.row("arrival lag p99 / max", results, |r| {
            let lag = r.arrival_lag.clone().unwrap_or_default().percentiles;
            format!(
                "{} / {}",
                human_ns(lag.p99 as f64),
                human_ns(lag.max as f64)
            )
        });
    }
    grid.row("wall time", results, |r| human_ns(r.wall_secs * 1e9));
    grid
}

/// Renders the table and verdict for `report`.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    header(report, &mut out);
    grid(report).render(&mut out);
    out.push('\n');
    for r in &report.results {
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
