//! The plots, as self-contained SVG (no scripts, no external fonts):
//!
//! - `lateness.svg`: a percentile plot of fire lateness, one line per implementation. The x
//!   axis is the percentile on the usual log scale of 1/(1−p) (0 %, 90 %, 99 %, 99.9 %, …), the
//!   y axis the lateness (ms/µs/ns). Lower is better. The legend gives each line's n, p99.9 and
//!   max; the part of a line that rests on fewer than 10 samples (the far tail) is drawn
//!   dotted and thin, with a ring where it starts.
//! - `cost.svg`: horizontal bars, each one figure on a linear axis from 0 and labelled just
//!   past its end. On top, each implementation's time inside the timer as a share of one core
//!   at the workload's rate; below, one panel per operation (insert, cancel, reset, fire) with
//!   its median cost per call from the cost runs, each panel on its own axis. A median below
//!   what the runs resolve is an outlined bar up to that resolution, labelled `<…`. Lower is
//!   better.

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

/// The start of a plot `height` tall: its canvas, title and subtitle.
fn header(out: &mut String, height: f64, title: &str, subtitle: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">"#
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

/// A point of a lateness line: x (decades of 1/(1−q)), the value in ns, and whether it rests
/// on enough samples.
type Point = (f64, f64, bool);

/// Each series' points, up to the `x_max`-th decade.
fn percentile_lines(series: &[(&str, &Histogram<u64>)], x_max: f64) -> Vec<Vec<Point>> {
    let line = |h: &Histogram<u64>| -> Vec<Point> {
        let n = h.len() as f64;
        h.iter_quantiles(5)
            .map(|v| {
                let q = v.quantile_iterated_to();
                let x = if q >= 1.0 {
                    x_max
                } else {
                    (1.0 / (1.0 - q)).log10().min(x_max)
                };
                let enough = (1.0 - q) * n >= FEW_SAMPLES;
                (x, v.value_iterated_to() as f64, enough)
            })
            .collect()
    };
    series
        .iter()
        .map(|(_, h)| if h.is_empty() { Vec::new() } else { line(h) })
        .collect()
}

/// The lateness plot's area: its axes' ranges, and where a point lands.
struct Frame {
    decades: u32,
    x_max: f64,
    /// ns per unit of the y axis, and the unit's name.
    scale: f64,
    unit: &'static str,
    y_max: f64,
    plot_w: f64,
    plot_h: f64,
}

impl Frame {
    fn new(decades: u32, raw_max: f64) -> Self {
        let (scale, unit) = if raw_max >= 1e6 {
            (1e6, "ms")
        } else if raw_max >= 1e3 {
            (1e3, "µs")
        } else {
            (1.0, "ns")
        };
        Self {
            decades,
            x_max: f64::from(decades),
            scale,
            unit,
            y_max: nice_ceil(raw_max / scale),
            plot_w: WIDTH - LEFT - RIGHT,
            plot_h: HEIGHT - TOP - BOTTOM,
        }
    }

    fn px(&self, x: f64) -> f64 {
        LEFT + x / self.x_max * self.plot_w
    }

    fn py(&self, y: f64) -> f64 {
        TOP + self.plot_h - (y / self.scale / self.y_max).min(1.0) * self.plot_h
    }

    /// The grid, the frame and the axis labels.
    fn axes(&self, out: &mut String) {
        let (plot_w, plot_h) = (self.plot_w, self.plot_h);
        for k in 0..=self.decades {
            let x = self.px(f64::from(k));
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"##,
                TOP + plot_h,
                TOP + plot_h + 18.0,
                percentile_label(k)
            );
        }
        for i in 0..=5 {
            let value = self.y_max * f64::from(i) / 5.0;
            let y = self.py(value * self.scale);
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
            r#"<text x="18" y="{:.1}" font-size="13" text-anchor="middle" transform="rotate(-90 18 {:.1})">lateness ({})</text>"#,
            TOP + plot_h / 2.0,
            TOP + plot_h / 2.0,
            self.unit
        );
    }

    /// Line `i`: the solid part, then from its last point on the dotted tail of few samples.
    fn line(&self, out: &mut String, i: usize, points: &[Point]) {
        let color = COLORS[i % COLORS.len()];
        let dash = DASHES[i % DASHES.len()];
        let at = |&(x, y, _): &Point| format!("{:.1},{:.1}", self.px(x), self.py(y));
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
                self.px(x),
                self.py(y)
            );
        }
    }

    /// Line `i`'s legend entry: its name, n, p99.9 and max, and on the real clock the loop's
    /// lag (a stalled loop makes every timer late; its own lag tells that apart).
    fn legend(&self, out: &mut String, i: usize, name: &str, h: &Histogram<u64>, report: &Report) {
        let color = COLORS[i % COLORS.len()];
        let dash = DASHES[i % DASHES.len()];
        let ly = TOP + 20.0 + i as f64 * 56.0;
        let lx = LEFT + self.plot_w + 16.0;
        let at = |q: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(q)
            }
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
            fmt(at(0.999)),
            fmt(max)
        );
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
}

/// Renders the lateness plot. `series` holds (implementation, lateness histogram in ns).
pub(crate) fn lateness(report: &Report, series: &[(&str, &Histogram<u64>)]) -> String {
    let max_count = series.iter().map(|(_, h)| h.len()).max().unwrap_or(0);
    let decades = ((max_count.max(1) as f64).log10().ceil() as u32).clamp(2, 6);
    let lines = percentile_lines(series, f64::from(decades));
    let raw_max = lines
        .iter()
        .flatten()
        .map(|&(_, y, _)| y)
        .fold(0.0f64, f64::max);
    let frame = Frame::new(decades, raw_max);
    let mut out = String::new();
    header(
        &mut out,
        HEIGHT,
        &format!(
            "Fire lateness by percentile — {} clock (lower is better)",
            report.clock
        ),
        &report.workload.describe(),
    );
    frame.axes(&mut out);
    for (i, ((name, h), points)) in series.iter().zip(&lines).enumerate() {
        frame.line(&mut out, i, points);
        frame.legend(&mut out, i, name, h, report);
    }
    let lx = LEFT + frame.plot_w + 16.0;
    let ly = TOP + 20.0 + series.len() as f64 * 56.0 + 6.0;
    let meaning = lateness_notes(report);
    let notes = meaning.iter().chain(&[
        "dotted: fewer than 10 samples",
        "beyond the point (o marks it)",
    ]);
    for (k, line) in notes.enumerate() {
        let _ = writeln!(
            out,
            r##"<text x="{lx:.1}" y="{:.1}" font-size="11" fill="#666">{line}</text>"##,
            ly + k as f64 * 14.0
        );
    }
    if raw_max == 0.0 && lines.iter().any(|l| !l.is_empty()) {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="15" text-anchor="middle" fill="#333">every timer fired in the tick of its deadline (lateness 0)</text>"##,
            LEFT + frame.plot_w / 2.0,
            TOP + frame.plot_h / 2.0
        );
    }
    out.push_str("</svg>\n");
    out
}

/// What lateness means in this report, for the plot's notes, in lines of a legend's width.
fn lateness_notes(report: &Report) -> [&'static str; 4] {
    if report.workload.lateness == "ticks" {
        [
            "lateness = (poll tick minus",
            "deadline tick) × tick: 0 for a",
            "correct timer polled at every",
            "next_deadline()",
        ]
    } else if report.command == "replay" {
        [
            "lateness = hand-over instant minus",
            "the start of the deadline's tick",
            "(a trace holds ticks); the trace's",
            "polls set when timers can fire",
        ]
    } else {
        [
            "lateness = hand-over instant minus",
            "intended deadline; deadlines round",
            "up to the tick, so up to one tick",
            "late is by design",
        ]
    }
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

/// One panel's bar: the implementation, and its figure (`None`: not measured).
type Bar = (String, Option<f64>);

/// Rows of one [`panel`], and its size.
const ROW: f64 = 22.0;
const NAME_W: f64 = 120.0;
const VALUE_W: f64 = 80.0;

/// Height of a panel of `rows` bars: title, bars, axis labels.
fn panel_height(rows: usize) -> f64 {
    24.0 + rows as f64 * ROW + 22.0
}

/// Draws one panel at (`x`, `y`), `w` wide: a title, then one horizontal bar per
/// implementation on a linear axis from 0, each labelled with its value just past its end (off
/// the data), and the axis's ticks below. A value below `floor` (what the figure resolves) is
/// an outlined bar up to `floor`, labelled `<floor`.
fn panel(
    out: &mut String,
    (x, y, w): (f64, f64, f64),
    title: &str,
    bars: &[Bar],
    floor: f64,
    fmt: &dyn Fn(f64) -> String,
    tick: &dyn Fn(f64) -> String,
) {
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
        y + 14.0,
        escape(title)
    );
    let top = y + 24.0;
    let bar_x = x + NAME_W;
    let bar_w = w - NAME_W - VALUE_W;
    let max = bars
        .iter()
        .filter_map(|(_, v)| *v)
        .map(|v| v.max(floor))
        .fold(0.0f64, f64::max);
    let axis_max = nice_ceil(max);
    let px = |v: f64| bar_x + (v / axis_max).clamp(0.0, 1.0) * bar_w;
    let bottom = top + bars.len() as f64 * ROW;
    let ticks = (0..=4).map(|i| axis_max * f64::from(i) / 4.0);
    for (v, gx) in ticks.map(|v| (v, px(v))) {
        let _ = writeln!(
            out,
            r##"<line x1="{gx:.1}" y1="{top:.1}" x2="{gx:.1}" y2="{bottom:.1}" stroke="#ddd"/><text x="{gx:.1}" y="{:.1}" font-size="10" fill="#555" text-anchor="middle">{}</text>"##,
            bottom + 13.0,
            tick(v)
        );
    }
    for (i, (name, value)) in bars.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let ry = top + i as f64 * ROW;
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"#,
            bar_x - 8.0,
            ry + 15.0,
            escape(name)
        );
        let Some(v) = *value else {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#666">not measured</text>"##,
                bar_x + 4.0,
                ry + 15.0
            );
            continue;
        };
        let (end, fill, label) = if v < floor {
            let fill = format!(
                r#"fill="white" stroke="{color}" stroke-width="1.5" stroke-dasharray="3 2""#
            );
            (px(floor), fill, format!("<{}", fmt(floor)))
        } else {
            (px(v), format!(r#"fill="{color}" opacity="0.85""#), fmt(v))
        };
        let _ = writeln!(
            out,
            r#"<rect x="{bar_x:.1}" y="{:.1}" width="{:.1}" height="16" {fill}/>"#,
            ry + 3.0,
            (end - bar_x).max(0.5)
        );
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#111">{label}</text>"##,
            end + 5.0,
            ry + 15.0
        );
    }
    let _ = writeln!(
        out,
        r##"<line x1="{bar_x:.1}" y1="{top:.1}" x2="{bar_x:.1}" y2="{bottom:.1}" stroke="#333"/>"##
    );
}

/// Renders the cost plot from the report, every bar one figure on a linear axis from 0: on top,
/// each implementation's time inside the timer as a share of one core at the workload's rate
/// (what switching saves); below, per operation, its median cost per call from the cost runs
/// (the single calls' median where a report has no cost runs).
pub(crate) fn cost(report: &Report) -> String {
    let results = &report.results;
    let rows = results.len().max(1);
    let height = TOP + panel_height(rows) + 16.0 + 2.0 * (panel_height(rows) + 12.0) + 20.0;
    let mut out = String::new();
    header(
        &mut out,
        height,
        &format!(
            "Time inside the timer — {} clock (lower is better)",
            report.clock
        ),
        &report.workload.describe(),
    );
    let width = WIDTH - 2.0 * 40.0;
    let share: Vec<Bar> = results
        .iter()
        .map(|r| (r.label(), (r.core_share > 0.0).then_some(r.core_share)))
        .collect();
    panel(
        &mut out,
        (40.0, TOP, width),
        "All calls: time inside the timer, % of one core (estimated: calls × mean cost per call)",
        &share,
        0.0,
        &|v| format!("{} %", trim_number((v * 100.0).round() / 100.0)),
        &|v| format!("{} %", trim_number(v)),
    );
    let runs = results.iter().any(|r| {
        CostsJson::OPS
            .iter()
            .any(|op| r.cost.get(op).is_some_and(|c| c.runs_p50 > 0.0))
    });
    let (floor, source) = if runs {
        (
            report.timing.run_resolution_ns,
            format!(
                "median of {} runs of {} identical calls",
                report.timing.runs_per_op, report.timing.calls_per_run
            ),
        )
    } else {
        (
            report.timing.resolution_ns.max(1.0),
            "median single call".to_string(),
        )
    };
    let half = (width - 40.0) / 2.0;
    let first = TOP + panel_height(rows) + 16.0;
    let _ = writeln!(
        out,
        r##"<text x="{WIDTH:.1}" y="{:.1}" font-size="11" fill="#555" text-anchor="end" dx="-40">per operation: {source}, on each panel's own axis</text>"##,
        first - 4.0
    );
    for (k, op) in CostsJson::OPS.iter().enumerate() {
        let bars: Vec<Bar> = results
            .iter()
            .map(|r| {
                let value = r
                    .cost
                    .get(op)
                    .map(|c: &CostJson| if runs { c.runs_p50 } else { c.p50 as f64 });
                (r.label(), value)
            })
            .collect();
        let x = 40.0 + (k % 2) as f64 * (half + 40.0);
        let y = first + (k / 2) as f64 * (panel_height(rows) + 12.0);
        panel(
            &mut out,
            (x, y, half),
            &format!("{op}: ns per call"),
            &bars,
            floor,
            &|v| fine_ns(v),
            &|v| format!("{}ns", trim_number(v)),
        );
    }
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

    /// The golden report with its implementations' core shares and insert medians set.
    fn report(shares: [f64; 4], inserts: [f64; 4]) -> Report {
        let text = include_str!("../../tests/golden/diff-base.json");
        let mut r: Report = serde_json::from_str(text).unwrap();
        assert_eq!(r.results.len(), 4);
        for (i, res) in r.results.iter_mut().enumerate() {
            res.core_share = shares[i];
            res.cost.insert.runs_p50 = inserts[i];
        }
        r
    }

    /// Every solid bar (`x`, `width`) with the x of the label drawn after it, in order.
    fn bars(svg: &str) -> Vec<(f64, f64, f64)> {
        let attr = |line: &str, name: &str| -> f64 {
            let at = line.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            line[at..].split('"').next().unwrap().parse().unwrap()
        };
        let lines: Vec<&str> = svg.lines().collect();
        lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.starts_with("<rect ") && l.contains(r#"height="16""#))
            .map(|(i, l)| (attr(l, "x"), attr(l, "width"), attr(lines[i + 1], "x")))
            .collect()
    }

    #[test]
    fn cost_bars_are_linear_from_zero_with_labels_past_their_ends() {
        let svg = cost(&report([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]));
        let bars = bars(&svg);
        // Five panels of four bars: the core share, then insert, cancel, reset, fire.
        assert_eq!(bars.len(), 20, "{svg}");
        for (x, w, label) in &bars {
            assert!(label > &(x + w), "a label on its bar: {x} {w} {label}");
        }
        // Linear from 0: widths in proportion to the values, in the share and insert panels.
        for panel in [&bars[0..4], &bars[4..8]] {
            let unit = panel[0].1;
            for (k, (_, w, _)) in panel.iter().enumerate() {
                assert!((w - unit * (k + 1) as f64).abs() < 0.5, "{panel:?}");
            }
        }
        assert!(
            svg.contains(">4 %</text>") && svg.contains(">40.0ns</text>"),
            "{svg}"
        );
        // One figure per mark: no whiskers, no log scale.
        assert!(!svg.contains("whisker") && !svg.contains("log scale"));
    }

    #[test]
    fn lateness_notes_say_what_each_view_measures() {
        let mut r = report([1.0; 4], [1.0; 4]);
        assert!(lateness_notes(&r).join(" ").contains("up to one tick"));
        r.command = "replay".into();
        let replay = lateness_notes(&r).join(" ");
        assert!(replay.contains("start of the deadline's tick") && !replay.contains("one tick"));
        r.workload.lateness = "ticks".into();
        assert!(lateness_notes(&r).join(" ").contains("poll tick"));
    }
}
