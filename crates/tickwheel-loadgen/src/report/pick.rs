//! "Which to pick": per metric family, the best implementation of this run and how far ahead
//! of the next best it is, or that the repetitions cannot separate the two.
//!
//! | family | figure (lower is better) |
//! |---|---|
//! | cost per timer call | time inside the timer ÷ timer calls, i.e. 1 / ops/s |
//! | tail lateness | lateness p99.9 |
//! | memory per timer | allocated bytes per live timer at the peak |
//!
//! Two implementations are **within noise** of each other when their repetitions overlap
//! (neither has every repetition better than every one of the other's), the same test `diff`
//! uses. Memory is deterministic and needs no repetitions. A lead under 1 % reads as `level
//! with`. A family is left out when the run has too few fires to rest p99.9 on 10 samples.

use std::fmt::Write as _;

use crate::report::json::{median_f64, Report, ResultJson};
use crate::units::human_ns;

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
    r.each_repetition()
        .iter()
        .map(|x| x.lateness.p999 as f64)
        .collect()
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
        ("cost per timer call", cost_per_call, true),
        ("lateness p99.9", tail_lateness, enough_fires),
        ("memory per timer", memory, true),
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
    }
    if report.timing.repeat == 1 {
        let _ = writeln!(
            out,
            "  (one repetition: noise unknown; --repeat 3 or more tells noise from difference)"
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
}
