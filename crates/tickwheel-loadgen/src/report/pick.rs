//! "Which to pick": per metric family, the best implementation of this run and how far ahead
//! of the next best it is, or that the repetitions cannot separate the two.
//!
//! | family | figure (lower is better) |
//! |---|---|
//! | cost per timer call | time inside the timer ÷ timer calls, i.e. 1 / ops/s |
//! | tail lateness | lateness p99.9 |
//! | memory per timer | allocated bytes per live timer at the peak, on storage grown as needed (the charged pass); no pick when the storage was preallocated (`--repeat 1`, the real clock) |
//!
//! Two implementations are **within noise** of each other when their repetitions overlap
//! (neither has every repetition better than every one of the other's), the same test `diff`
//! uses. Memory is deterministic and needs no repetitions. A lead under 1 % reads as `level
//! with`. A family is left out when the run has too few fires to rest p99.9 on 10 samples.
//!
//! Under the cost line, `time in the timer` says what the cost means for the workload: each
//! implementation's time inside the timer per second of run time, as a share of one core
//! (`core_share` in `report.json`: `busy_secs / run_secs`, the median over the repetitions),
//! with its cost ratio to the best, and the share of a core the best saves over the next at the
//! workload's rate.

use std::fmt::Write as _;

use crate::report::assemble::median_f64;
use crate::report::json::{Report, ResultJson};
use crate::units::{human_ns, si};

/// One family's answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pick {
    /// The family, e.g. `cost per timer call`.
    pub(crate) family: &'static str,
    /// The best implementation and its figure.
    pub(crate) best: (String, f64),
    /// The next best and its figure.
    pub(crate) next: (String, f64),
    /// next ÷ best (≥ 1).
    pub(crate) ratio: f64,
    /// The repetitions of the two overlap.
    pub(crate) within_noise: bool,
}

type Figure = fn(&ResultJson) -> Vec<f64>;

/// The cost family's name.
pub(crate) const COST: &str = "cost per timer call";

/// A lead below this ratio is printed as level: it is within the figures' rounding.
const LEVEL: f64 = 1.01;

fn cost_per_call(r: &ResultJson) -> Vec<f64> {
    let per = |ops: f64| if ops > 0.0 { 1e9 / ops } else { f64::INFINITY };
    r.each_repetition()
        .iter()
        .map(|x| per(x.ops_per_sec))
        .collect()
}

fn tail_lateness(r: &ResultJson) -> Vec<f64> {
    r.lateness_each().iter().map(|x| x.p999 as f64).collect()
}

fn memory(r: &ResultJson) -> Vec<f64> {
    vec![r.bytes_per_timer]
}

/// The picks for `report`: none for a service run or a run of one implementation.
pub(crate) fn picks(report: &Report) -> Vec<Pick> {
    let results: Vec<&ResultJson> = report.results.iter().collect();
    if results.len() < 2 || results.iter().any(|r| r.threads.is_some()) {
        return Vec::new();
    }
    let enough_fires = results
        .iter()
        .all(|r| r.lateness.count as f64 * 0.001 >= 10.0);
    let families: [(&'static str, Figure, bool); 3] = [
        (COST, cost_per_call, true),
        ("lateness p99.9", tail_lateness, enough_fires),
        // Preallocated storage measures the preallocation, not the design: no verdict then.
        (
            "memory per timer",
            memory,
            results.iter().all(|r| r.bytes_grown),
        ),
    ];
    families
        .into_iter()
        .filter(|(_, _, usable)| *usable)
        .filter_map(|(family, figure, _)| {
            let mut ranked: Vec<(String, Vec<f64>, f64)> = results
                .iter()
                .map(|r| {
                    let values = figure(r);
                    let median = median_f64(values.clone());
                    (r.label(), values, median)
                })
                .collect();
            ranked.sort_by(|a, b| a.2.total_cmp(&b.2));
            let (best, next) = (ranked.first()?, ranked.get(1)?);
            let best_max = best.1.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let next_min = next.1.iter().copied().fold(f64::INFINITY, f64::min);
            Some(Pick {
                family,
                best: (best.0.clone(), best.2),
                next: (next.0.clone(), next.2),
                ratio: if best.2 > 0.0 { next.2 / best.2 } else { 1.0 },
                within_noise: best.1.len() > 1 && next.1.len() > 1 && best_max >= next_min,
            })
        })
        .collect()
}

/// A family's figure as printed.
pub(crate) fn shown(family: &str, v: f64) -> String {
    if family == "memory per timer" {
        format!("{v:.1} B")
    } else {
        human_ns(v)
    }
}

/// How far `p`'s best leads: within noise of, level with, or by how much over, the next best.
pub(crate) fn lead(p: &Pick) -> String {
    if p.within_noise {
        format!(
            "within noise of {} ({})",
            p.next.0,
            shown(p.family, p.next.1)
        )
    } else if p.ratio < LEVEL {
        format!("level with {} ({})", p.next.0, shown(p.family, p.next.1))
    } else {
        format!(
            "{:.2}x better than the next, {} ({})",
            p.ratio,
            p.next.0,
            shown(p.family, p.next.1)
        )
    }
}

/// A share of a core in percent with about three significant digits: `17.1`, `1.71`,
/// `0.0171`.
pub(crate) fn percent(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return "0".into();
    }
    let decimals = (2 - v.log10().floor() as i32).clamp(1, 4) as usize;
    format!("{v:.decimals$}")
}

/// The rate the timer's time was spent at: the workload's, the achieved one on the real
/// clock, or the trace's own pace.
fn at_rate(report: &Report, best: &ResultJson) -> String {
    if report.workload.trace.is_some() {
        "at the trace's pace".into()
    } else if report.clock == "real" {
        format!("at {} req/s achieved", si(best.achieved_rate))
    } else {
        format!("at {} req/s", si(report.workload.rate))
    }
}

/// The `time in the timer` line for the cost pick `p`: every implementation's share of one
/// core and cost ratio to the best, in the pick's order, then what picking the best saves.
fn core_share_line(report: &Report, p: &Pick) -> Option<String> {
    let result = |label: &str| report.results.iter().find(|r| r.label() == label);
    let (best, next) = (result(&p.best.0)?, result(&p.next.0)?);
    let mut ranked: Vec<(&ResultJson, f64)> = report
        .results
        .iter()
        .map(|r| (r, median_f64(cost_per_call(r))))
        .collect();
    ranked.sort_by(|a, b| a.1.total_cmp(&b.1));
    let shares: Vec<String> = ranked
        .iter()
        .enumerate()
        .map(|(i, (r, cost))| {
            if i == 0 {
                format!("{} {} % of a core", r.label(), percent(r.core_share))
            } else {
                let ratio = if p.best.1 > 0.0 { cost / p.best.1 } else { 1.0 };
                format!("{} {} % ({ratio:.2}x)", r.label(), percent(r.core_share))
            }
        })
        .collect();
    let saved = next.core_share - best.core_share;
    let verdict = if p.within_noise {
        format!(
            "{} and {} are within noise of each other ({} % of a core apart)",
            p.best.0,
            p.next.0,
            percent(saved.abs())
        )
    } else if p.ratio < LEVEL || saved <= 0.0 {
        format!(
            "{} and {} cost the same share of a core",
            p.best.0, p.next.0
        )
    } else {
        format!(
            "{} instead of {} saves {} % of a core",
            p.best.0,
            p.next.0,
            percent(saved)
        )
    };
    Some(format!(
        "{}: {verdict} {}",
        shares.join(", "),
        at_rate(report, best)
    ))
}

/// The block printed after the table.
pub(crate) fn render(report: &Report) -> String {
    let picks = picks(report);
    let mut out = String::new();
    if picks.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "which to pick (this workload; medians of {} repetition{}):",
        report.timing.repeat,
        if report.timing.repeat == 1 { "" } else { "s" }
    );
    for p in &picks {
        let against = lead(p);
        let _ = writeln!(
            out,
            "  {:<22}{:<14}{:>10}  {against}",
            p.family,
            p.best.0,
            shown(p.family, p.best.1)
        );
        if p.family == COST {
            if let Some(line) = core_share_line(report, p) {
                let _ = writeln!(out, "  {:<22}{line}", "time in the timer");
            }
        }
    }
    if report.timing.repeat == 1 {
        let _ = writeln!(
            out,
            "  (one repetition: noise unknown; --repeat 3 or more tells noise from difference)"
        );
    }
    if report.results.iter().any(|r| !r.bytes_grown) {
        let _ = writeln!(
            out,
            "  (memory: storage preallocated for the workload, no pick; the charged pass of \
             --repeat 2 or more on the virtual clock measures it grown)"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_ratio_and_noise() {
        let mut report: Report =
            serde_json::from_str(include_str!("../../tests/golden/diff-base.json")).unwrap();
        // A report from before memory was measured grown: its memory is the preallocation's.
        assert!(report.results.iter().all(|r| !r.bytes_grown));
        assert!(picks(&report)
            .iter()
            .all(|p| p.family != "memory per timer"));
        for r in &mut report.results {
            r.bytes_grown = true;
        }
        let picks = picks(&report);
        assert_eq!(picks.len(), 3);
        for p in &picks {
            assert!(p.ratio >= 1.0 && p.best.1 <= p.next.1, "{p:?}");
        }
        // Make the two fastest identical in every repetition: they must read as noise.
        let cost = picks[0].clone();
        let best = report
            .results
            .iter()
            .find(|r| r.timer == cost.best.0)
            .unwrap()
            .clone();
        for r in &mut report.results {
            if r.timer == cost.next.0 {
                r.repetitions = best.repetitions.clone();
            }
        }
        let again = super::picks(&report);
        assert!(again[0].within_noise, "{:?}", again[0]);
        assert!(render(&report).contains("within noise of"));
    }

    #[test]
    fn the_cost_line_says_what_share_of_a_core_picking_the_best_saves() {
        let mut report: Report =
            serde_json::from_str(include_str!("../../tests/golden/diff-base.json")).unwrap();
        for (r, share) in report.results.iter_mut().zip([1.7, 2.3, 3.1, 2.9]) {
            r.core_share = share;
        }
        let cost = picks(&report).remove(0);
        assert_eq!(cost.family, COST);
        let text = render(&report);
        let line = text
            .lines()
            .find(|l| l.contains("time in the timer"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            line.contains(" % of a core") && line.contains("req/s"),
            "{line}"
        );
        let share = |label: &str| {
            report
                .results
                .iter()
                .find(|r| r.label() == label)
                .unwrap()
                .core_share
        };
        let saved = share(&cost.next.0) - share(&cost.best.0);
        if !cost.within_noise && saved > 0.0 {
            assert!(
                line.contains(&format!("saves {} % of a core", percent(saved))),
                "{line}"
            );
        }
        assert_eq!(percent(1.712), "1.71");
        assert_eq!(percent(17.12), "17.1");
        assert_eq!(percent(0.01712), "0.0171");
        assert_eq!(percent(0.0), "0");
    }
}
