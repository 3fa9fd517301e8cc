//! `diff`: compare two `report.json` files, per implementation and metric, and judge each
//! metric by its kind.
//!
//! | kind | metrics | a regression when |
//! |---|---|---|
//! | exact | counts (scheduled, cancelled, reset, fired, …, overdue and pending at end) and the timer's work counters | the value changed at all (virtual clock only: there they depend on the seed alone) |
//! | memory | bytes per live timer (only between two figures measured alike: grown or preallocated); peak RSS | it grew by more than `--memory-tolerance` (peak RSS, which also holds what the allocator kept from earlier runs, only when also beyond noise) |
//! | timing | ops/s (every call's cost, over the whole run); lateness p50 … p99.99 | worse by more than `--tolerance` **and** beyond the noise the repetitions show |
//! | diagnostic | per operation, the cost runs' median per call and the single calls' p99 | never fails; marked `SHIFTED` when it would have been a regression |
//!
//! Early fires are a regression whenever the current report has any, on either clock.
//!
//! **Lateness** compares the headline: when both reports show the min-cost lateness of the
//! charged pass (see [`virtual_clock`](crate::virtual_clock)), that one figure per report, judged
//! on the tolerance alone (it has no repetitions, and the preemptions the noise test guards
//! against are already left out); otherwise every repetition's own lateness, as measured, on
//! both sides (a report from before the charged pass, or `--lateness-costs measured`).
//!
//! **Beyond noise** means the two sets of repetitions do not overlap: every current repetition
//! is worse than every baseline repetition. For `n` and `m` repetitions of one build that
//! happens by chance with probability `1 / C(n + m, n)` (1 in 252 for 5 against 5, 1 in 20 for
//! 3 against 3), whatever the noise's shape; more repetitions see smaller changes.
//!
//! Two runs minutes apart on a shared machine also differ as a whole, which no report can see:
//! the default tolerance, 25 %, sits above the largest such drift of a gating metric between
//! back-to-back runs of one build (docs/ci-gate.md). Per-operation costs drift further, so
//! they are shown, with the same test, but do not fail a diff; ops/s gates.
//!
//! Not judged (shown, marked why): a timing figure when either report has a single repetition
//! falls back to the tolerance alone, and the output says it cannot tell noise from change; a
//! difference no larger than what the figure resolves (one counter step, in whole ns, for single
//! calls and lateness; the run resolution for the cost runs); a percentile that rests on fewer
//! than [`MIN_TAIL_SAMPLES`] samples (the lateness max always, and p99.99 of a run with fewer
//! than 100,000 fires); counts on the real clock, where they follow the machine's timing.
//!
//! Two reports compare only when their workloads agree (every knob, the lateness view, the
//! handler cost and the profile included; for `replay` reports, the trace: its length, record
//! count, start tick and checksum) and they were taken on the same clock; otherwise `diff`
//! exits 2.
//!
//! The output starts with both reports' machine and build side by side (see
//! [`context`](crate::context); `not recorded` for a report written before reports had it),
//! and warns, there and again before the verdict lines, when the CPU model or the core count
//! differ. The warning changes no verdict and no exit status.

use std::fmt::Write as _;

use crate::error::Error;
use crate::report::assemble::median_f64;
use crate::report::json::{
    CostJson, CostsJson, Percentiles, RepetitionJson, Report, ResultJson, TraceJson,
};
use crate::units::{fine_ns, human_ns};

/// A percentile needs at least this many samples at or beyond it to be judged.
pub(crate) const MIN_TAIL_SAMPLES: f64 = 10.0;

/// Which direction is better for a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Better {
    Lower,
    Higher,
}

/// How a metric is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Must not change.
    Exact,
    /// May grow by the memory tolerance.
    Memory,
    /// Judged against the tolerance and the repetitions' noise.
    Timing,
}

/// The judgement of one metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Unchanged, or within what is allowed.
    Ok,
    /// Worse than the tolerance, but the repetitions overlap: it may be noise.
    WithinNoise,
    /// Shown only; the reason is in [`Line::note`].
    NotJudged,
    /// A per-operation cost worse beyond the tolerance and the noise: shown for diagnosis,
    /// not failing (see the module docs).
    Shifted,
    /// A deterministic figure changed.
    Changed,
    /// Worse beyond what is allowed.
    Regression,
}

impl Verdict {
    fn fails(self) -> bool {
        matches!(self, Verdict::Changed | Verdict::Regression)
    }
}

/// One compared metric.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Line {
    pub(crate) timer: String,
    /// Metric name, e.g. `lateness.p99`.
    pub(crate) metric: String,
    pub(crate) kind: Kind,
    /// Baseline value (the median over repetitions for timing and memory).
    pub(crate) baseline: f64,
    pub(crate) current: f64,
    /// current / baseline, when the baseline is not 0.
    pub(crate) ratio: Option<f64>,
    pub(crate) verdict: Verdict,
    /// Why a metric was not judged, or how it was.
    pub(crate) note: &'static str,
}

/// Every line of a diff, and what could not be compared.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Judged {
    /// The metrics, per implementation in the current report's order.
    pub(crate) lines: Vec<Line>,
    /// Implementations present in only one report.
    pub(crate) unmatched: Vec<String>,
    /// Both reports carry repetitions, so timing is judged against noise.
    pub(crate) noise_known: bool,
}

impl Judged {
    /// Any metric failed.
    pub(crate) fn regressed(&self) -> bool {
        self.lines.iter().any(|l| l.verdict.fails())
    }
}

/// A timing metric: its repetitions' values, the share of samples beyond it (for a
/// percentile), and which way is better.
struct Timing {
    name: String,
    better: Better,
    /// `1 - q` for a percentile at quantile `q`; `None` for a mean-like figure.
    tail: Option<f64>,
    /// Per repetition.
    values: Vec<f64>,
    /// Samples the percentile is taken over.
    samples: u64,
    /// Differences up to this are below what the figure resolves.
    floor: f64,
    /// One figure from the charged pass (min-cost lateness): judged on the tolerance alone.
    min_cost: bool,
}

/// The timing metrics of `r`; with `min_cost`, lateness is the charged pass's one figure (both
/// reports have it as their headline), else every repetition's own, as measured.
fn timings(r: &ResultJson, report: &Report, min_cost: bool) -> Vec<Timing> {
    let reps = r.each_repetition();
    // One step of the counter, in the whole ns single calls are recorded in.
    let call_floor = report.timing.resolution_ns.max(1.0).ceil();
    let run_floor = report.timing.run_resolution_ns;
    let each = |f: &dyn Fn(&RepetitionJson) -> f64| reps.iter().map(f).collect::<Vec<f64>>();
    let mut out = vec![Timing {
        name: "ops_per_sec".into(),
        better: Better::Higher,
        tail: None,
        values: each(&|x| x.ops_per_sec),
        samples: r.timer_calls,
        floor: 0.0,
        min_cost: false,
    }];
    for op in CostsJson::OPS {
        let cost = |x: &RepetitionJson| x.cost.get(op).copied().unwrap_or_default();
        let samples = r.cost.get(op).map_or(0, |c| c.samples);
        let runs = u64::from(report.timing.runs_per_op);
        type Pick = fn(&CostJson) -> f64;
        let stats: [(&str, f64, u64, f64, Pick); 2] = [
            ("p50", 0.5, runs, run_floor, |c| c.runs_p50),
            ("call_p99", 0.99, samples, call_floor, |c| c.p99 as f64),
        ];
        for (stat, q, samples, floor, pick) in stats {
            if stat != "call_p99" && r.cost.get(op).map_or(0.0, |c| c.runs_p50) <= 0.0 {
                continue;
            }
            out.push(Timing {
                name: format!("cost.{op}.{stat}"),
                better: Better::Lower,
                tail: Some(1.0 - q),
                values: each(&|x| pick(&cost(x))),
                samples,
                floor,
                min_cost: false,
            });
        }
    }
    let n = r.lateness.count;
    let shown: Vec<Percentiles> = if min_cost {
        vec![r.lateness.percentiles]
    } else {
        reps.iter().map(|x| x.lateness).collect()
    };
    for (i, (stat, _, q, _)) in Percentiles::default().each().into_iter().enumerate() {
        out.push(Timing {
            name: format!("lateness.{stat}"),
            better: Better::Lower,
            tail: Some(1.0 - q),
            values: shown.iter().map(|x| x.each()[i].3 as f64).collect(),
            samples: n,
            floor: call_floor,
            min_cost,
        });
    }
    out
}

fn exact(r: &ResultJson) -> Vec<(&'static str, u64)> {
    vec![
        ("scheduled", r.scheduled),
        ("cancelled", r.cancelled),
        ("reset", r.reset),
        ("fired", r.fired),
        ("idle_fired", r.idle_fired),
        ("request_fired", r.request_fired),
        ("late_responses", r.late_responses),
        ("drained", r.drained),
        ("early_fires", r.early_fires),
        ("overdue_at_end", r.overdue_at_end),
        ("pending_at_end", r.pending_at_end),
        ("work.cascaded", r.work.cascaded),
        ("work.slots_scanned", r.work.slots_scanned),
        ("work.stale_skipped", r.work.stale_skipped),
        ("work.compactions", r.work.compactions),
        ("work.max_call_work", r.work.max_call_work),
    ]
}

/// Checks that two reports describe the same workload on the same clock.
///
/// # Errors
/// [`Error::Input`] naming every knob that differs.
pub(crate) fn comparable(baseline: &Report, current: &Report) -> Result<(), Error> {
    let (b, c) = (&baseline.workload, &current.workload);
    let s = |x: &dyn ToString| x.to_string();
    let knobs = [
        ("clock", s(&baseline.clock), s(&current.clock)),
        ("connections", s(&b.connections), s(&c.connections)),
        ("rate", s(&b.rate), s(&c.rate)),
        ("duration", s(&b.duration_secs), s(&c.duration_secs)),
        (
            "idle timeout",
            s(&b.idle_timeout_secs),
            s(&c.idle_timeout_secs),
        ),
        (
            "request timeout",
            s(&b.request_timeout_secs),
            s(&c.request_timeout_secs),
        ),
        ("slow fraction", s(&b.slow_fraction), s(&c.slow_fraction)),
        ("tick ns", s(&b.tick_ns), s(&c.tick_ns)),
        ("seed", s(&b.seed), s(&c.seed)),
        ("lateness view", s(&b.lateness), s(&c.lateness)),
        (
            "handler cost ns",
            s(&b.handler_cost_ns),
            s(&c.handler_cost_ns),
        ),
        ("herd", s(&b.herd), s(&c.herd)),
        (
            "profile",
            format!("{:?}", b.profile),
            format!("{:?}", c.profile),
        ),
    ];
    let mut differ: Vec<String> = knobs
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(name, x, y)| format!("{name} {x} vs {y}"))
        .collect();
    let trace = |t: &Option<TraceJson>| match t {
        Some(t) => format!(
            "trace {} ({} bytes, {} records, checksum {})",
            t.file, t.bytes, t.records, t.checksum
        ),
        None => "no trace".into(),
    };
    let identity = |t: &Option<TraceJson>| {
        t.as_ref()
            .map(|t| (t.bytes, t.records, t.checksum.clone(), t.start_tick))
    };
    if identity(&b.trace) != identity(&c.trace) {
        differ.push(format!("{} vs {}", trace(&b.trace), trace(&c.trace)));
    }
    if differ.is_empty() {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "the reports come from different workloads, so their figures do not compare: {}",
            differ.join(", ")
        )))
    }
}

/// `cur` is worse than `base` by more than `tolerance`, as a ratio: 0.25 flags a cost 1.25×
/// higher and a throughput 1.25× lower alike.
fn worse(better: Better, base: f64, cur: f64, tolerance: f64) -> bool {
    match better {
        Better::Lower => cur > base * (1.0 + tolerance),
        Better::Higher => cur * (1.0 + tolerance) < base,
    }
}

/// Every current repetition is worse than every baseline repetition.
fn separated(better: Better, base: &[f64], cur: &[f64]) -> bool {
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match better {
        Better::Lower => min(cur) > max(base),
        Better::Higher => max(cur) < min(base),
    }
}

/// A verdict, and why.
type Judgement = (Verdict, &'static str);

/// A count or work counter: on the virtual clock, any change fails.
fn judge_exact(metric: &str, b: u64, c: u64, virtual_clock: bool) -> Judgement {
    if metric == "early_fires" && c > 0 {
        (Verdict::Regression, "a timer fired early")
    } else if !virtual_clock {
        (Verdict::NotJudged, "real clock: counts follow timing")
    } else if b == c {
        (Verdict::Ok, "")
    } else {
        (Verdict::Changed, "deterministic: must not change")
    }
}

/// A memory figure, per repetition: worse beyond the tolerance fails, and with `noisy` (peak
/// RSS, which also holds what the allocator kept from earlier runs) only beyond noise too.
fn judge_memory(rb: &[f64], rc: &[f64], tolerance: f64, noisy: bool) -> Judgement {
    let (b, c) = (median_f64(rb.to_vec()), median_f64(rc.to_vec()));
    if b == 0.0 || c == 0.0 {
        (Verdict::NotJudged, "not measured")
    } else if !worse(Better::Lower, b, c, tolerance) {
        (Verdict::Ok, "")
    } else if !noisy {
        (Verdict::Regression, "beyond the memory tolerance")
    } else if rb.len() < 2 || rc.len() < 2 {
        (
            Verdict::Regression,
            "beyond the memory tolerance; noise unknown",
        )
    } else if separated(Better::Lower, rb, rc) {
        (Verdict::Regression, "beyond the memory tolerance and noise")
    } else {
        (Verdict::WithinNoise, "repetitions overlap")
    }
}

/// Bytes per live timer, judged only between two figures measured alike: both on storage
/// grown as needed, or both preallocated.
fn judge_bytes(base: &ResultJson, cur: &ResultJson, tolerance: f64) -> Judgement {
    if base.bytes_grown != cur.bytes_grown {
        return (Verdict::NotJudged, "one preallocated, the other grown");
    }
    judge_memory(
        &[base.bytes_per_timer],
        &[cur.bytes_per_timer],
        tolerance,
        false,
    )
}

/// A timing figure: worse beyond the tolerance and beyond the noise fails.
fn judge_timing(tb: &Timing, tc: &Timing, tolerance: f64) -> Judgement {
    let (b, c) = (median_f64(tb.values.clone()), median_f64(tc.values.clone()));
    let repeated = tb.values.len() > 1 && tc.values.len() > 1;
    let floor = tb.floor.max(tc.floor);
    let few = tb
        .tail
        .is_some_and(|tail| (tail * tb.samples.min(tc.samples) as f64) < MIN_TAIL_SAMPLES);
    if few {
        (Verdict::NotJudged, "rests on fewer than 10 samples")
    } else if (c - b).abs() <= floor || !worse(tb.better, b, c, tolerance) {
        (Verdict::Ok, "")
    } else if repeated && !separated(tb.better, &tb.values, &tc.values) {
        (Verdict::WithinNoise, "repetitions overlap")
    } else if tb.name.starts_with("cost.") {
        (Verdict::Shifted, "per-operation cost, diagnostic")
    } else if tb.min_cost {
        (
            Verdict::Regression,
            "beyond the tolerance (min-cost lateness: one figure, preemptions left out)",
        )
    } else if !repeated {
        (Verdict::Regression, "beyond the tolerance; noise unknown")
    } else {
        (Verdict::Regression, "beyond tolerance and noise")
    }
}

/// Compares `current` against `baseline`.
pub(crate) fn compare(
    baseline: &Report,
    current: &Report,
    tolerance: f64,
    memory_tolerance: f64,
) -> Judged {
    let virtual_clock = baseline.clock == "virtual" && current.clock == "virtual";
    let mut judged = Judged::default();
    let key = |r: &ResultJson| (r.timer.clone(), r.threads);
    for name in baseline
        .results
        .iter()
        .filter(|b| !current.results.iter().any(|c| key(c) == key(b)))
    {
        judged
            .unmatched
            .push(format!("{} (baseline only)", name.label()));
    }
    let mut all_repeated = true;
    for cur in &current.results {
        let Some(base) = baseline.results.iter().find(|b| key(b) == key(cur)) else {
            judged
                .unmatched
                .push(format!("{} (current only)", cur.label()));
            continue;
        };
        let mut push = |metric: String, kind, b: f64, c: f64, (verdict, note): Judgement| {
            judged.lines.push(Line {
                timer: cur.label(),
                metric,
                kind,
                baseline: b,
                current: c,
                ratio: (b != 0.0).then(|| c / b),
                verdict,
                note,
            });
        };
        for ((metric, b), (_, c)) in exact(base).into_iter().zip(exact(cur)) {
            let judgement = judge_exact(metric, b, c, virtual_clock);
            push(metric.into(), Kind::Exact, b as f64, c as f64, judgement);
        }
        let (b, c) = (base.bytes_per_timer, cur.bytes_per_timer);
        let judgement = judge_bytes(base, cur, memory_tolerance);
        push("bytes_per_timer".into(), Kind::Memory, b, c, judgement);
        let rss = |r: &ResultJson| -> Vec<f64> {
            r.each_repetition()
                .iter()
                .map(|x| x.peak_rss_bytes.unwrap_or(0) as f64)
                .collect()
        };
        let (rb, rc) = (rss(base), rss(cur));
        let judgement = judge_memory(&rb, &rc, memory_tolerance, true);
        let (b, c) = (median_f64(rb), median_f64(rc));
        push("peak_rss_bytes".into(), Kind::Memory, b, c, judgement);
        // Lateness compares the charged passes' figures when both reports show them, else every
        // repetition's own, as measured, on both sides.
        let min_cost = base.lateness_is_min_cost() && cur.lateness_is_min_cost();
        for (tb, tc) in timings(base, baseline, min_cost)
            .into_iter()
            .zip(timings(cur, current, min_cost))
        {
            all_repeated &= (tb.values.len() > 1 && tc.values.len() > 1) || tb.min_cost;
            let (b, c) = (median_f64(tb.values.clone()), median_f64(tc.values.clone()));
            let judgement = judge_timing(&tb, &tc, tolerance);
            push(tb.name, Kind::Timing, b, c, judgement);
        }
    }
    judged.noise_known = all_repeated;
    judged
}

fn value(metric: &str, v: f64) -> String {
    if metric.starts_with("cost.") && !metric.ends_with("call_p99") {
        fine_ns(v)
    } else if metric.starts_with("cost.") || metric.starts_with("lateness.") {
        human_ns(v)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Renders the comparison: a table, then one verdict line per implementation.
pub(crate) fn render(
    judged: &Judged,
    baseline: &Report,
    current: &Report,
    tolerance: f64,
) -> String {
    let contexts = (baseline.context.as_ref(), current.context.as_ref());
    let mut out = crate::context::side_by_side(contexts.0, contexts.1);
    out.push('\n');
    let _ = writeln!(
        out,
        "baseline: {} repetitions; current: {} repetitions; timing regression: worse by more than \
         {:.0} % and beyond the repetitions' noise",
        baseline.timing.repeat,
        current.timing.repeat,
        tolerance * 100.0
    );
    let _ = writeln!(
        out,
        "{:<16}{:<22}{:>14}{:>14}{:>8}  verdict",
        "timer", "metric", "baseline", "current", "ratio"
    );
    for l in &judged.lines {
        let verdict = match l.verdict {
            Verdict::Ok => "ok",
            Verdict::WithinNoise => "within noise",
            Verdict::NotJudged => "not judged",
            Verdict::Shifted => "SHIFTED",
            Verdict::Changed => "CHANGED",
            Verdict::Regression => "REGRESSION",
        };
        let note = if l.note.is_empty() {
            String::new()
        } else {
            format!(" ({})", l.note)
        };
        let _ = writeln!(
            out,
            "{:<16}{:<22}{:>14}{:>14}{:>8}  {verdict}{note}",
            l.timer,
            l.metric,
            value(&l.metric, l.baseline),
            value(&l.metric, l.current),
            l.ratio.map_or("n/a".into(), |r| format!("{r:.2}")),
        );
    }
    for name in &judged.unmatched {
        let _ = writeln!(out, "not compared: {name} is in one report only");
    }
    if !judged.noise_known {
        let _ = writeln!(
            out,
            "note: a report has a single repetition, so timing is judged against the tolerance \
             alone and this diff cannot tell noise from change; run both with --repeat 5"
        );
    }
    let mut timers: Vec<&str> = Vec::new();
    for l in &judged.lines {
        if !timers.contains(&l.timer.as_str()) {
            timers.push(&l.timer);
        }
    }
    if timers.is_empty() {
        let _ = writeln!(out, "no implementation appears in both reports");
    }
    if let Some(warning) = crate::context::mismatch(contexts.0, contexts.1) {
        let _ = writeln!(out, "{warning}");
    }
    for timer in timers {
        verdict(judged, timer, &mut out);
    }
    out
}

/// The verdict line of `timer`: ok, or what failed; then what is within noise or shifted.
fn verdict(judged: &Judged, timer: &str, out: &mut String) {
    let lines: Vec<&Line> = judged.lines.iter().filter(|l| l.timer == timer).collect();
    let failed: Vec<String> = lines
        .iter()
        .filter(|l| l.verdict.fails())
        .map(|l| match l.ratio {
            Some(r) => format!("{} {r:.2}x", l.metric),
            None => l.metric.clone(),
        })
        .collect();
    let noisy = lines
        .iter()
        .filter(|l| l.verdict == Verdict::WithinNoise)
        .count();
    let shifted: Vec<&str> = lines
        .iter()
        .filter(|l| l.verdict == Verdict::Shifted)
        .map(|l| l.metric.as_str())
        .collect();
    let mut shifted = shifted.join(", ");
    if !shifted.is_empty() {
        shifted.insert_str(0, "; per-operation costs shifted: ");
    }
    if failed.is_empty() {
        let noisy = match noisy {
            0 => "nothing beyond the tolerance".into(),
            n => format!("{n} beyond the tolerance but within noise"),
        };
        let _ = writeln!(out, "verdict {timer}: ok ({noisy}{shifted})");
    } else {
        let changed = lines.iter().any(|l| l.verdict == Verdict::Changed);
        let _ = writeln!(
            out,
            "verdict {timer}: {} ({}{shifted})",
            if changed { "CHANGED" } else { "REGRESSION" },
            failed.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{DEFAULT_MEMORY_TOLERANCE, DEFAULT_TOLERANCE};

    /// A report with `reps` repetitions whose timing figures are `scale` × a base with a little
    /// spread.
    pub(crate) fn report(reps: usize, scale: f64) -> Report {
        let text = include_str!("../tests/golden/diff-base.json");
        let mut r: Report = serde_json::from_str(text).unwrap();
        for res in &mut r.results {
            res.repetitions.truncate(reps);
        }
        scale_timing(&mut r, scale);
        r
    }

    /// Scales every timing figure of `r` by `scale` (costs and lateness up, ops/s down).
    pub(crate) fn scale_timing(r: &mut Report, scale: f64) {
        let up = |v: &mut u64| *v = (*v as f64 * scale).round() as u64;
        for res in &mut r.results {
            res.ops_per_sec /= scale;
            for rep in &mut res.repetitions {
                rep.ops_per_sec /= scale;
                for op in CostsJson::OPS {
                    let c = match op {
                        "insert" => &mut rep.cost.insert,
                        "cancel" => &mut rep.cost.cancel,
                        "reset" => &mut rep.cost.reset,
                        _ => &mut rep.cost.fire,
                    };
                    up(&mut c.p50);
                    up(&mut c.p99);
                    up(&mut c.max);
                    c.runs_p50 *= scale;
                    c.runs_p99 *= scale;
                    c.runs_mean *= scale;
                }
                let l = &mut rep.lateness;
                for v in [
                    &mut l.p50,
                    &mut l.p90,
                    &mut l.p99,
                    &mut l.p999,
                    &mut l.p9999,
                    &mut l.max,
                ] {
                    up(v);
                }
            }
        }
    }

    #[test]
    fn same_report_is_clean() {
        let a = report(5, 1.0);
        let judged = compare(&a, &a, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE);
        assert!(!judged.regressed());
        assert!(judged.noise_known);
        assert!(judged
            .lines
            .iter()
            .all(|l| matches!(l.verdict, Verdict::Ok | Verdict::NotJudged)));
    }

    #[test]
    fn a_slower_build_is_a_regression_on_every_implementation() {
        let base = report(5, 1.0);
        let slow = report(5, 1.3);
        let judged = compare(&base, &slow, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE);
        let text = render(&judged, &base, &slow, DEFAULT_TOLERANCE);
        for r in &base.results {
            assert!(
                text.contains(&format!("verdict {}: REGRESSION", r.timer)),
                "{text}"
            );
        }
        // Faster is never a regression.
        let fast = report(5, 1.0 / 1.3);
        assert!(!compare(&base, &fast, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE).regressed());
    }

    #[test]
    fn overlapping_repetitions_are_noise_and_a_single_one_falls_back_to_the_tolerance() {
        let base = report(5, 1.0);
        let mut noisy = base.clone();
        // One repetition of each implementation 30 % slower: the sets overlap.
        for res in &mut noisy.results {
            let mut one = Report {
                results: vec![res.clone()],
                ..base.clone()
            };
            scale_timing(&mut one, 1.3);
            res.repetitions[0] = one.results[0].repetitions[0].clone();
        }
        assert!(!compare(&base, &noisy, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE).regressed());
        let single = report(1, 1.3);
        let judged = compare(
            &report(1, 1.0),
            &single,
            DEFAULT_TOLERANCE,
            DEFAULT_MEMORY_TOLERANCE,
        );
        assert!(judged.regressed() && !judged.noise_known);
        assert!(render(&judged, &base, &single, DEFAULT_TOLERANCE)
            .contains("cannot tell noise from change"));
    }

    #[test]
    fn a_changed_count_or_an_early_fire_fails_and_memory_has_its_own_tolerance() {
        let base = report(5, 1.0);
        let mut changed = base.clone();
        changed.results[1].fired += 1;
        let judged = compare(&base, &changed, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE);
        assert!(judged
            .lines
            .iter()
            .any(|l| l.metric == "fired" && l.verdict == Verdict::Changed));
        let mut early = base.clone();
        early.results[0].early_fires = 1;
        assert!(compare(&base, &early, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE).regressed());
        let mut fat = base.clone();
        fat.results[2].bytes_per_timer *= 1.04;
        assert!(!compare(&base, &fat, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE).regressed());
        fat.results[2].bytes_per_timer *= 1.04;
        assert!(compare(&base, &fat, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE).regressed());
    }

    #[test]
    fn a_shifted_operation_cost_is_shown_but_does_not_fail() {
        let base = report(5, 1.0);
        let mut costly = base.clone();
        for rep in &mut costly.results[0].repetitions {
            rep.cost.fire.runs_p50 *= 3.0;
        }
        let judged = compare(&base, &costly, DEFAULT_TOLERANCE, DEFAULT_MEMORY_TOLERANCE);
        assert!(!judged.regressed());
        let line = judged
            .lines
            .iter()
            .find(|l| l.metric == "cost.fire.p50" && l.timer == base.results[0].timer)
            .unwrap();
        assert_eq!(line.verdict, Verdict::Shifted);
        let text = render(&judged, &base, &costly, DEFAULT_TOLERANCE);
        assert!(
            text.contains("per-operation costs shifted: cost.fire.p50"),
            "{text}"
        );
    }

    #[test]
    fn throughput_tolerance_is_a_ratio_like_cost() {
        assert!(worse(Better::Higher, 100.0, 100.0 / 1.26, 0.25));
        assert!(!worse(Better::Higher, 100.0, 100.0 / 1.24, 0.25));
        assert!(worse(Better::Lower, 100.0, 126.0, 0.25));
        assert!(!worse(Better::Lower, 100.0, 124.0, 0.25));
    }

    #[test]
    fn other_workloads_do_not_compare() {
        let base = report(5, 1.0);
        let mut other = base.clone();
        other.workload.connections += 1;
        other.workload.lateness = "ticks".into();
        let err = comparable(&base, &other).unwrap_err().to_string();
        assert!(
            err.contains("connections") && err.contains("lateness view"),
            "{err}"
        );
        assert!(comparable(&base, &base).is_ok());
    }
}
