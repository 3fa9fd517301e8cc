//! `paired`: two builds of the load generator on one workload, interleaved, judged pair by pair.
//!
//! A stored baseline was measured in another minute, on a machine whose speed drifts; no
//! tolerance tells that drift from a regression. Here the base build and the build under test
//! run the same command alternately (A B, then B A, and so on), so each pair sees the same
//! minute of the machine, and each implementation is judged by `head ops/s ÷ base ops/s`
//! within each pair: the drift cancels in the ratio. The verdict is the median ratio over the
//! pairs: below `1 − tolerance` is a regression (exit 1).
//!
//! Reports are read as plain JSON (`results[].timer`, `ops_per_sec` and the counts), so the two
//! builds may be different releases. On the virtual clock the counts depend on the seed alone;
//! a pair whose counts differ means the builds did not run the same workload, or one timer
//! misbehaved, and fails the gate too.

use std::path::Path;
use std::process::Command;

use serde::Serialize;
use serde_json::Value;

use crate::error::Error;

/// One implementation's ratios over the pairs, and its verdict.
#[derive(Debug, Serialize)]
pub(crate) struct Judged {
    pub(crate) timer: String,
    /// `head ops/s ÷ base ops/s` in each pair, in run order.
    pub(crate) ratios: Vec<f64>,
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// `ok`, `REGRESSION` or `COUNTS DIFFER`.
    pub(crate) verdict: &'static str,
}

/// What `paired.json` holds.
#[derive(Debug, Serialize)]
struct Verdict<'a> {
    base: &'a Path,
    head: &'a Path,
    command: &'a [String],
    pairs: u32,
    tolerance: f64,
    implementations: &'a [Judged],
}

/// The default `--tolerance` of the wall cost: the smallest that left every one of 20 gates of
/// one commit built twice clean on a shared 2-core machine (`scripts/paired-study.sh`; 0.15
/// flagged 1, 0.05 flagged 7; the figures are in `docs/ci-gate.md`).
pub(crate) const WALL_TOLERANCE: f64 = 0.2;
/// The default `--tolerance` of the simulated cost: it repeats exactly, so 1 % is a change.
pub(crate) const SIMULATED_TOLERANCE: f64 = 0.01;

/// `paired --cost simulated`: `command --cost simulated` once with each build (they repeat
/// exactly, so one run each is enough), judged per implementation and call kind by
/// [`crate::simulated::judge()`]; writes `out/paired.json` and prints a verdict line per
/// implementation; returns 1 on a regression or differing counts, 0 otherwise.
pub(crate) fn simulated(
    base: &Path,
    head: &Path,
    tolerance: f64,
    out: &Path,
    command: &[String],
) -> Result<u8, Error> {
    check_args(1, tolerance, command)?;
    if command.iter().any(|a| a.starts_with("--cost")) {
        return Err(Error::Input(
            "leave --cost out of the command: paired --cost simulated adds it".into(),
        ));
    }
    let mut command = command.to_vec();
    command.extend(["--cost".to_string(), "simulated".to_string()]);
    let side = |name: &str, bin: &Path| {
        eprintln!("paired: {name}, simulated");
        let dir = out.join(name);
        launch(bin, &command, &dir)?;
        let path = dir.join("report.json");
        crate::simulated::read_report(&path)?
            .ok_or_else(|| Error::Input(format!("{}: not a simulated report", path.display())))
    };
    let (b, h) = (side("base", base)?, side("head", head)?);
    let judged = crate::simulated::judge(&b, &h, tolerance)?;
    let verdict = serde_json::json!({
        "base": base,
        "head": head,
        "command": command,
        "cost": "simulated",
        "model": crate::simulated::MODEL,
        "tolerance": tolerance,
        "calls": judged,
    });
    let path = out.join("paired.json");
    let text = serde_json::to_string_pretty(&verdict).expect("plain data serialises");
    std::fs::write(&path, text + "\n").map_err(|e| Error::io("writing", &path, e))?;
    print!("{}", crate::simulated::render(&judged, tolerance));
    Ok(u8::from(judged.iter().any(|j| j.verdict != "ok")))
}

/// What one run reported of each implementation: its name, ops/s and counts.
type Figures = Vec<(String, f64, [u64; 4])>;

/// Runs `pairs` pairs of `base` and `head` on `command` (a `compare`, `run` or `replay`
/// command line, without `--out`), writes every report under `out` and `out/paired.json`,
/// prints the verdicts; returns the exit code: 1 on a regression, 0 otherwise.
pub(crate) fn paired(
    base: &Path,
    head: &Path,
    pairs: u32,
    tolerance: f64,
    out: &Path,
    command: &[String],
) -> Result<u8, Error> {
    check_args(pairs, tolerance, command)?;
    let mut runs: Vec<(Figures, Figures)> = Vec::new();
    for pair in 1..=pairs {
        let side = |name: &str, bin: &Path| {
            eprintln!("paired: pair {pair} of {pairs}, {name}");
            run(bin, command, &out.join(format!("{name}-{pair}")))
        };
        // A B, then B A: neither build always runs first in a pair.
        runs.push(if pair % 2 == 1 {
            let b = side("base", base)?;
            (b, side("head", head)?)
        } else {
            let h = side("head", head)?;
            (side("base", base)?, h)
        });
    }
    let judged = judge(&runs, tolerance)?;
    let verdict = Verdict {
        base,
        head,
        command,
        pairs,
        tolerance,
        implementations: &judged,
    };
    let path = out.join("paired.json");
    let text = serde_json::to_string_pretty(&verdict).expect("plain data serialises");
    std::fs::write(&path, text + "\n").map_err(|e| Error::io("writing", &path, e))?;
    print!("{}", render(&judged, pairs, tolerance));
    Ok(u8::from(judged.iter().any(|j| j.verdict != "ok")))
}

fn check_args(pairs: u32, tolerance: f64, command: &[String]) -> Result<(), Error> {
    if pairs == 0 {
        return Err(Error::Input("--pairs must be at least 1".into()));
    }
    if !(tolerance.is_finite() && (0.0..1.0).contains(&tolerance)) {
        return Err(Error::Input(format!(
            "--tolerance must be a fraction in [0, 1) (0.05 = 5 %), got {tolerance}"
        )));
    }
    match command.first().map(String::as_str) {
        Some("compare" | "run" | "replay") => {}
        _ => {
            return Err(Error::Input(
                "give the command both builds run after `--`: compare, run or replay".into(),
            ))
        }
    }
    if command
        .iter()
        .any(|a| a == "--out" || a.starts_with("--out="))
    {
        return Err(Error::Input(
            "leave --out out of the command: paired gives each run its own directory".into(),
        ));
    }
    Ok(())
}

/// Runs `bin command --out dir` and reads what it reported. Exit 0 and 1 (a threshold) both
/// leave a report; any other exit is an error.
fn run(bin: &Path, command: &[String], dir: &Path) -> Result<Figures, Error> {
    launch(bin, command, dir)?;
    figures(&dir.join("report.json"))
}

/// Runs `bin command --out dir`, its output but the errors hidden. Exit 0 and 1 (a threshold)
/// both leave a report; any other exit is an error.
fn launch(bin: &Path, command: &[String], dir: &Path) -> Result<(), Error> {
    let status = Command::new(bin)
        .args(command)
        .arg("--out")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| Error::io("running", bin, e))?;
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(Error::Input(format!(
            "{} {} failed ({status}); its messages are above",
            bin.display(),
            command.join(" ")
        )));
    }
    Ok(())
}

/// Each implementation's name, ops/s and counts (scheduled, cancelled, reset, fired).
fn figures(path: &Path) -> Result<Figures, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
    let bad = || Error::Input(format!("{}: not a load generator report", path.display()));
    let json: Value = serde_json::from_str(&text).map_err(|_| bad())?;
    let results = json
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    results
        .iter()
        .map(|r| {
            let count = |k: &str| r.get(k).and_then(Value::as_u64).ok_or_else(bad);
            let name = r.get("timer").and_then(Value::as_str).ok_or_else(bad)?;
            let threads = r.get("threads").and_then(Value::as_u64);
            let name = threads.map_or(name.to_string(), |t| format!("{name} ×{t}"));
            let ops = r
                .get("ops_per_sec")
                .and_then(Value::as_f64)
                .ok_or_else(bad)?;
            let counts = [
                count("scheduled")?,
                count("cancelled")?,
                count("reset")?,
                count("fired")?,
            ];
            Ok((name, ops, counts))
        })
        .collect()
}

/// The ratios and verdict of each implementation the base reported.
pub(crate) fn judge(runs: &[(Figures, Figures)], tolerance: f64) -> Result<Vec<Judged>, Error> {
    let Some((first, _)) = runs.first() else {
        return Ok(Vec::new());
    };
    let mut judged = Vec::new();
    for (timer, _, _) in first {
        let mut ratios = Vec::new();
        let mut counts_differ = false;
        for (base, head) in runs {
            let find = |f: &Figures| f.iter().find(|(n, _, _)| n == timer).cloned();
            let (Some((_, b, bc)), Some((_, h, hc))) = (find(base), find(head)) else {
                return Err(Error::Input(format!("a run did not report {timer}")));
            };
            counts_differ |= bc != hc;
            ratios.push(h / b);
        }
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0;
        let verdict = if counts_differ {
            "COUNTS DIFFER"
        } else if median < 1.0 - tolerance {
            "REGRESSION"
        } else {
            "ok"
        };
        let (min, max) = (sorted[0], sorted[n - 1]);
        let timer = timer.clone();
        judged.push(Judged {
            timer,
            ratios,
            median,
            min,
            max,
            verdict,
        });
    }
    Ok(judged)
}

/// The table `paired` prints: one line per implementation.
fn render(judged: &[Judged], pairs: u32, tolerance: f64) -> String {
    let mut s = format!(
        "paired: {pairs} pairs; ops/s of the build under test ÷ the base's, per pair; \
         a median below {:.3} is a regression\n{:<16} {:>8} {:>17}  verdict\n",
        1.0 - tolerance,
        "implementation",
        "median",
        "spread"
    );
    for j in judged {
        let spread = format!("{:.3}–{:.3}", j.min, j.max);
        s += &format!(
            "{:<16} {:>8.3} {:>17}  {}\n",
            j.timer, j.median, spread, j.verdict
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(ops: &[(&str, f64)]) -> Figures {
        ops.iter()
            .map(|&(n, o)| (n.to_string(), o, [10, 5, 3, 1]))
            .collect()
    }

    #[test]
    fn the_median_ratio_decides() {
        let runs: Vec<(Figures, Figures)> = [(100.0, 88.0), (120.0, 110.0), (90.0, 96.0)]
            .iter()
            .map(|&(b, h)| {
                (
                    figures(&[("hashed", b), ("heap", b)]),
                    figures(&[("hashed", h), ("heap", b)]),
                )
            })
            .collect();
        let judged = judge(&runs, 0.05).unwrap();
        assert_eq!(judged[0].timer, "hashed");
        // Ratios 0.88, 0.917, 1.067: the median 0.917 is below 0.95.
        assert!((judged[0].median - 110.0 / 120.0).abs() < 1e-12);
        assert_eq!(judged[0].verdict, "REGRESSION");
        assert!((judged[0].min - 0.88).abs() < 1e-12);
        assert_eq!(judged[1].verdict, "ok");
        assert_eq!(judged[1].median, 1.0);
    }

    #[test]
    fn differing_counts_fail_and_a_missing_implementation_is_an_error() {
        let base = figures(&[("hashed", 100.0)]);
        let mut head = figures(&[("hashed", 100.0)]);
        head[0].2[3] = 2;
        let judged = judge(&[(base.clone(), head)], 0.05).unwrap();
        assert_eq!(judged[0].verdict, "COUNTS DIFFER");
        let err = judge(&[(base, figures(&[("heap", 1.0)]))], 0.05).unwrap_err();
        assert!(err.to_string().contains("did not report hashed"), "{err}");
    }

    #[test]
    fn bad_arguments_get_clear_messages() {
        let cmd = |s: &[&str]| s.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        let msg = |p, t, c: &[&str]| check_args(p, t, &cmd(c)).unwrap_err().to_string();
        assert!(msg(0, 0.05, &["compare"]).contains("--pairs"));
        assert!(msg(3, 1.5, &["compare"]).contains("--tolerance"));
        assert!(msg(3, 0.05, &["diff"]).contains("compare, run or replay"));
        assert!(msg(3, 0.05, &["compare", "--out", "x"]).contains("leave --out out"));
        assert!(check_args(3, 0.05, &cmd(&["replay", "t.trace"])).is_ok());
    }
}
