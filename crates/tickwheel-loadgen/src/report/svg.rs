//! The plots, as self-contained SVG (no scripts, no external fonts):
//!
//! - `lateness.svg`: a percentile plot of fire lateness, one line per implementation. The x
//!   axis is the percentile on the usual log scale of 1/(1−p) (0 %, 90 %, 99 %, 99.9 %, …), the
//!   y axis the lateness (ms/µs/ns). Lower is better. The legend gives each line's n, p99.9 and
//!   max; the part of a line that rests on fewer than 10 samples (the far tail) is drawn
//!   dotted and thin, with a ring where it starts.
//! - `cost.svg`: the cost of each operation, grouped by operation with one bar per
//!   implementation: the bar is the median, the whisker the 99th percentile, on a log scale,
//!   each median labelled above its whisker. A median below the cost clock's resolution is an
//!   outlined bar up to the resolution line, labelled `<1ns`. Lower is better.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use crate::report::json::{CostJson, CostsJson, Report};
use crate::units::{count, fine_ns, human_ns};

/// A point of a lateness line rests on fewer samples than this beyond it: drawn dotted.
const FEW_SAMPLES: f64 = 10.0;

const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"];
const DASHES: [&str; 4] = ["", "9 4", "3 3", "12 3 3 3"];

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 540.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 250.0;
const TOP: f64 = 70.0;
const BOTTOM: f64 = 60.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn header(out: &mut String, title: &str, subtitle: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="28" font-size="18" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let _ = writeln!(
        out,
        r##"<text x="{LEFT}" y="48" font-size="12" fill="#555">{}</text>"##,
        escape(subtitle)
    );
}

/// A round number at or above `x`, 1/2/5 × a power of ten.
fn nice_ceil(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}

/// The percentile label of the decade `k` on the 1/(1−p) axis: 0 → "0%", 1 → "90%", 2 → "99%".
fn percentile_label(k: u32) -> String {
    if k == 0 {
        "0%".into()
    } else {
        let nines = 100.0 - 100.0 / 10f64.powi(k as i32);
        let decimals = k.saturating_sub(2) as usize;
        format!("{nines:.decimals$}%")
    }
}

/// Renders the lateness plot. `series` holds (implementation, lateness histogram in ns).
pub(crate) fn lateness(report: &Report, series: &[(&str, &Histogram<u64>)]) -> String {
    // Points: (log10(1/(1-q)), value) up to the largest decade any series reaches.
    let max_count = series.iter().map(|(_, h)| h.len()).max().unwrap_or(0);
    let decades = ((max_count.max(1) as f64).log10().ceil() as u32).clamp(2, 6);
    let x_max = f64::from(decades);
    // Points: (x, value, rests on enough samples).
    let mut lines: Vec<Vec<(f64, f64, bool)>> = Vec::new();
    for (_, h) in series {
        let mut points = Vec::new();
        if !h.is_empty() {
            let n = h.len() as f64;
            for v in h.iter_quantiles(5) {
                let q = v.quantile_iterated_to();
                let x = if q >= 1.0 {
                    x_max
                } else {
                    (1.0 / (1.0 - q)).log10().min(x_max)
                };
                let enough = (1.0 - q) * n >= FEW_SAMPLES;
                points.push((x, v.value_iterated_to() as f64, enough));
            }
        }
        lines.push(points);
    }
    let raw_max = lines
        .iter()
        .flatten()
        .map(|&(_, y, _)| y)
        .fold(0.0f64, f64::max);
    let (scale, unit_label) = if raw_max >= 1e6 {
        (1e6, "ms")
    } else if raw_max >= 1e3 {
        (1e3, "µs")
    } else {
        (1.0, "ns")
    };
    let y_max = nice_ceil(raw_max / scale);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + x / x_max * plot_w;
    let py = |y: f64| TOP + plot_h - (y / scale / y_max).min(1.0) * plot_h;

    let mut out = String::new();
    let w = &report.workload;
    header(
        &mut out,
        &format!(
            "Fire lateness by percentile — {} clock (lower is better)",
            report.clock
        ),
        &w.describe(),
    );
    // Grid and axes.
    for k in 0..=decades {
        let x = px(f64::from(k));
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0,
            percentile_label(k)
        );
    }
    for i in 0..=5 {
        let value = y_max * f64::from(i) / 5.0;
        let y = py(value * scale);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            trim_number(value)
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w:.1}" height="{plot_h:.1}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="middle">percentile</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 14.0
    );
    let _ = writeln!(
        out,
        r#"<text x="18" y="{:.1}" font-size="13" text-anchor="middle" transform="rotate(-90 18 {:.1})">lateness ({unit_label})</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    // Lines and legend.
    for (i, ((name, h), points)) in series.iter().zip(&lines).enumerate() {
        let color = COLORS[i % COLORS.len()];
        let dash = DASHES[i % DASHES.len()];
        let at = |&(x, y, _): &(f64, f64, bool)| format!("{:.1},{:.1}", px(x), py(y));
        // The solid part, then from its last point on the dotted tail of few samples.
        let solid = points.iter().take_while(|p| p.2).count();
        if solid > 0 {
            let path: Vec<String> = points[..solid].iter().map(at).collect();
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.5" stroke-dasharray="{dash}"/>"#,
                path.join(" ")
            );
        }
        if solid < points.len() {
            let from = solid.saturating_sub(1);
            let path: Vec<String> = points[from..].iter().map(at).collect();
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.2" stroke-dasharray="2 3" class="few-samples"/>"#,
                path.join(" ")
            );
            let (x, y, _) = points[from];
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="white" stroke="{color}" stroke-width="1.5"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = TOP + 20.0 + i as f64 * 56.0;
        let lx = LEFT + plot_w + 16.0;
        let p999 = if h.is_empty() {
            0
        } else {
            h.value_at_quantile(0.999)
        };
        let max = if h.is_empty() { 0 } else { h.max() };
        let fmt = |v: u64| human_ns(v as f64);
        let _ = writeln!(
            out,
            r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}" font-size="14" font-weight="bold">{} <tspan font-size="11" font-weight="normal" fill="#444">n = {}</tspan></text><text x="{:.1}" y="{:.1}" font-size="11" fill="#444">p99.9 {}, max {}</text>"##,
            lx + 36.0,
            lx + 44.0,
            ly + 5.0,
            escape(name),
            count(h.len()),
            lx + 44.0,
            ly + 21.0,
            fmt(p999),
            fmt(max)
        );
        // On the real clock, a stalled loop (a busy machine) makes every timer late; the loop's
        // own lag tells that apart from the timer's.
        if let Some(lag) = report.results.get(i).and_then(|r| r.arrival_lag.as_ref()) {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#444">loop lag max {}</text>"##,
                lx + 44.0,
                ly + 35.0,
                human_ns(lag.percentiles.max as f64)
            );
        }
    }
    {
        let lx = LEFT + plot_w + 16.0;
        let ly = TOP + 20.0 + series.len() as f64 * 56.0 + 6.0;
        for (k, line) in [
            "lateness = hand-over instant minus",
            "intended deadline; deadlines round",
            "up to the tick, so up to one tick",
            "late is by design",
            "dotted: fewer than 10 samples",
            "beyond the point (o marks it)",
        ]
        .iter()
        .enumerate()
        {
            let _ = writeln!(
                out,
                r##"<text x="{lx:.1}" y="{:.1}" font-size="11" fill="#666">{line}</text>"##,
                ly + k as f64 * 14.0
            );
        }
    }
    if raw_max == 0.0 && lines.iter().any(|l| !l.is_empty()) {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="15" text-anchor="middle" fill="#333">every timer fired in the tick of its deadline (lateness 0)</text>"##,
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        );
    }
    out.push_str("</svg>\n");
    out
}

fn trim_number(v: f64) -> String {
    let text = format!("{v:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() {
        "0".into()
    } else {
        text.into()
    }
}

/// The bar of one implementation and operation: the per-call median (from the cost runs, or
/// the single calls where there are none), the resolution it was measured at, and the whisker
/// (the single calls' p99), all in ns.
fn bar(report: &Report, c: &CostJson) -> (f64, f64, f64) {
    if c.runs_p50 > 0.0 {
        (c.runs_p50, report.timing.run_resolution_ns, c.p99 as f64)
    } else {
        (
            c.p50 as f64,
            report.timing.resolution_ns.max(1.0),
            c.p99 as f64,
        )
    }
}

/// Renders the cost plot from the report: per operation, a bar (median per call) and whisker
/// (single calls' p99) per implementation, log scale.
pub(crate) fn cost(report: &Report) -> String {
    let ops = CostsJson::OPS;
    let results = &report.results;
    let bars: Vec<Vec<Option<(f64, f64, f64)>>> = results
        .iter()
        .map(|r| {
            ops.iter()
                .map(|op| r.cost.get(op).map(|c| bar(report, c)))
                .collect()
        })
        .collect();
    let top_value = bars
        .iter()
        .flatten()
        .flatten()
        .map(|&(p50, _, p99)| p50.max(p99))
        .fold(10.0f64, f64::max);
    // Log scale from 0.1 ns, with a decade of headroom above the tallest whisker for its label.
    let floor_log = -1.0;
    let decades = (top_value * 10.0).log10().ceil().max(2.0) - floor_log;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let py = |ns: f64| {
        let log = ns.max(0.1).log10() - floor_log;
        TOP + plot_h - (log / decades).clamp(0.0, 1.0) * plot_h
    };

    let mut out = String::new();
    header(
        &mut out,
        &format!(
            "Cost per operation — {} clock (lower is better)",
            report.clock
        ),
        &format!(
            "bar: median per call ({} runs of {} calls, resolution {:.2}ns); whisker: p99 of \
             single calls (resolution {}); outlined: below resolution",
            report.timing.runs_per_op,
            report.timing.calls_per_run,
            report.timing.run_resolution_ns,
            human_ns(report.timing.resolution_ns)
        ),
    );
    for k in 0..=decades as i32 {
        let ns = 10f64.powi(k + floor_log as i32);
        let y = py(ns);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            if ns < 1.0 {
                format!("{ns}ns")
            } else {
                human_ns(ns)
            }
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w:.1}" height="{plot_h:.1}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="18" y="{:.1}" font-size="13" text-anchor="middle" transform="rotate(-90 18 {:.1})">cost per call (log scale)</text>"#,
        TOP + plot_h / 2.0,
        TOP + plot_h / 2.0
    );
    let group_w = plot_w / ops.len() as f64;
    let n = results.len().max(1) as f64;
    let bar_w = (group_w * 0.8 / n).min(48.0);
    for (g, op) in ops.iter().enumerate() {
        let gx = LEFT + group_w * g as f64;
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle">{op}</text>"#,
            gx + group_w / 2.0,
            TOP + plot_h + 22.0
        );
        let start = gx + (group_w - bar_w * n) / 2.0;
        for (i, per_op) in bars.iter().enumerate() {
            let Some((p50, resolution, p99)) = per_op[g] else {
                continue;
            };
            let color = COLORS[i % COLORS.len()];
            let x = start + bar_w * i as f64;
            let below = p50 < resolution;
            let y50 = py(if below { resolution } else { p50 });
            let y99 = py(p99).min(y50);
            let floor = TOP + plot_h;
            let fill = if below {
                format!(
                    r#"fill="white" stroke="{color}" stroke-width="1.5" stroke-dasharray="3 2""#
                )
            } else {
                format!(r#"fill="{color}" opacity="0.85""#)
            };
            let _ = writeln!(
                out,
                r#"<rect x="{:.1}" y="{y50:.1}" width="{:.1}" height="{:.1}" {fill}/>"#,
                x + 2.0,
                bar_w - 4.0,
                (floor - y50).max(0.5)
            );
            let cx = x + bar_w / 2.0;
            let _ = writeln!(
                out,
                r##"<line x1="{cx:.1}" y1="{y50:.1}" x2="{cx:.1}" y2="{y99:.1}" stroke="#222" stroke-width="1.5"/><line x1="{:.1}" y1="{y99:.1}" x2="{:.1}" y2="{y99:.1}" stroke="#222" stroke-width="1.5"/>"##,
                cx - 6.0,
                cx + 6.0
            );
            // Vertical, starting above the whisker's cap, so no label crosses a whisker.
            let ty = y99 - 6.0;
            let label = if below {
                format!("<{}", fine_ns(resolution))
            } else {
                fine_ns(p50)
            };
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{ty:.1}" font-size="10" fill="#111" transform="rotate(-90 {:.1} {ty:.1})">{label}</text>"##,
                cx + 3.5,
                cx + 3.5,
            );
        }
    }
    for (i, r) in results.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let ly = TOP + 20.0 + i as f64 * 30.0;
        let lx = LEFT + plot_w + 16.0;
        let _ = writeln!(
            out,
            r#"<rect x="{lx:.1}" y="{:.1}" width="24" height="14" fill="{color}" opacity="0.85"/><text x="{:.1}" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
            ly - 11.0,
            lx + 32.0,
            ly + 1.0,
            escape(&r.label())
        );
    }
    let _ = writeln!(
        out,
        r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#444">label above whisker: median</text>"##,
        LEFT + plot_w + 16.0,
        TOP + 20.0 + n * 30.0 + 4.0
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_labels() {
        let labels: Vec<String> = (0..=5).map(percentile_label).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
    }

    #[test]
    fn nice_numbers() {
        assert_eq!(nice_ceil(0.0), 1.0);
        assert_eq!(nice_ceil(3.2), 5.0);
        assert_eq!(nice_ceil(1.0), 1.0);
        assert_eq!(nice_ceil(1200.0), 2000.0);
    }
}
