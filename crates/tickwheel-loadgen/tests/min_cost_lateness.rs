//! The timer's own lateness: with `--repeat` 2 or more on the virtual clock, a charged pass
//! replays the same calls, each charged its fastest repetition's cost, and its lateness is the
//! headline; `--lateness-costs measured` shows the repetitions' own lateness instead, and
//! report.json keeps both.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_tickwheel-loadgen");

/// A small, fast virtual workload, with `extra` flags.
fn run(out: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "compare",
            "--connections",
            "2000",
            "--rate",
            "20000",
            "--duration",
            "2s",
            "--idle-timeout",
            "500ms",
            "--request-timeout",
            "30ms",
            "--slow-fraction",
            "0.05",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .output()
        .expect("binary runs")
}

fn report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json written");
    serde_json::from_str(&text).expect("valid JSON")
}

fn p999(lateness: &serde_json::Value) -> u64 {
    lateness["p999"].as_u64().expect("p999")
}

/// The `#[Max = …]` a `.hgrm` ends with, in ns.
fn hgrm_max(path: &Path) -> f64 {
    let text = std::fs::read_to_string(path).expect("hgrm written");
    let line = text
        .lines()
        .find(|l| l.starts_with("#[Max"))
        .expect("a Max line");
    line.split(['=', ','])
        .nth(1)
        .and_then(|v| v.trim().parse().ok())
        .expect("a Max value")
}

#[test]
fn the_headline_is_the_min_cost_lateness_and_report_json_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--repeat", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("lateness shown: min-cost, the timer's own"),
        "{stdout}"
    );
    assert!(stdout.contains("  p99.9 as measured"), "{stdout}");
    let r = report(dir.path());
    assert_eq!(r["timing"]["lateness_costs"], "min");
    for res in r["results"].as_array().unwrap() {
        let timer = res["timer"].as_str().unwrap();
        let min = &res["lateness_min_cost"];
        let measured = &res["lateness_measured"];
        assert!(min.is_object() && measured.is_object(), "{timer}: {res}");
        assert_eq!(&res["lateness"], min, "{timer}: the headline is min-cost");
        assert_eq!(min["count"], res["fired"], "{timer}: every fire charged");
        assert!(
            p999(min) <= p999(measured),
            "{timer}: min-cost p99.9 {} above the measured {}",
            p999(min),
            p999(measured)
        );
        // The repetitions keep their own, measured figures.
        let reps = res["repetitions"].as_array().unwrap();
        assert_eq!(reps.len(), 2);
        for rep in reps {
            assert!(p999(&rep["lateness"]) >= p999(min), "{timer}: {rep}");
        }
        // The `.hgrm` holds the headline.
        let hgrm = hgrm_max(&dir.path().join(format!("{timer}-lateness.hgrm")));
        let want = min["max"].as_u64().unwrap() as f64;
        assert!(
            (hgrm - want).abs() <= want * 0.002 + 1.0,
            "{timer}: .hgrm max {hgrm} vs the min-cost max {want}"
        );
    }
}

#[test]
fn the_flag_switches_the_headline_to_the_measured_lateness() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--repeat", "2", "--lateness-costs", "measured"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("lateness shown: as measured"), "{stdout}");
    assert!(stdout.contains("  p99.9 min-cost"), "{stdout}");
    let r = report(dir.path());
    assert_eq!(r["timing"]["lateness_costs"], "measured");
    for res in r["results"].as_array().unwrap() {
        assert_eq!(res["lateness"], res["lateness_measured"], "{res}");
        assert!(p999(&res["lateness_min_cost"]) <= p999(&res["lateness_measured"]));
    }
}

#[test]
fn a_single_repetition_or_the_ticks_view_shows_the_lateness_as_measured() {
    for (extra, line) in [
        (
            &["--repeat", "1"][..],
            "lateness shown: as measured, each call's own cost",
        ),
        (
            &["--repeat", "2", "--lateness", "ticks"][..],
            "lateness shown: in ticks",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), extra);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {stdout}");
        assert!(stdout.contains(line), "{extra:?}: {stdout}");
        assert!(!stdout.contains("p99.9 as measured"), "{stdout}");
        let r = report(dir.path());
        assert_eq!(r["timing"]["lateness_costs"], "measured");
        for res in r["results"].as_array().unwrap() {
            assert!(res.get("lateness_min_cost").is_none(), "{res}");
            assert!(res.get("lateness_measured").is_none(), "{res}");
        }
    }
}

#[test]
fn the_real_clock_prints_the_load_average_next_to_the_lateness() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "run",
            "--timer",
            "hashed",
            "--clock",
            "real",
            "--connections",
            "200",
            "--rate",
            "2000",
            "--duration",
            "200ms",
            "--repeat",
            "2",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("lateness shown: as measured on the real clock")
            && stdout.contains("load average, 1 min:"),
        "{stdout}"
    );
    let r = report(dir.path());
    assert_eq!(r["timing"]["lateness_costs"], "measured");
}

#[test]
fn diff_compares_the_min_cost_lateness_of_two_such_reports() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&a, &b] {
        assert_eq!(run(d.path(), &["--repeat", "2"]).status.code(), Some(0));
    }
    // What is compared here is the lateness; two tiny runs' peak RSS can differ by more than the
    // default memory tolerance, so memory is left out of the verdict.
    let out = Command::new(BIN)
        .args(["diff", "--tolerance", "100", "--memory-tolerance", "100"])
        .arg(a.path().join("report.json"))
        .arg(b.path().join("report.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let a = report(a.path());
    let line = stdout
        .lines()
        .find(|l| l.starts_with("hashed") && l.contains("lateness.p999"))
        .unwrap_or_else(|| panic!("{stdout}"));
    let want = p999(&a["results"][0]["lateness_min_cost"]) as f64;
    let shown = line.split_whitespace().nth(2).unwrap();
    assert!(
        shown.ends_with("µs") || shown.ends_with("ms") || shown.ends_with("ns"),
        "{line}"
    );
    let ns = |s: &str| -> f64 {
        let (v, unit) = s.split_at(s.find(|c: char| c.is_alphabetic() || c == 'µ').unwrap());
        let v: f64 = v.parse().unwrap();
        v * match unit {
            "ns" => 1.0,
            "µs" => 1e3,
            "ms" => 1e6,
            _ => 1e9,
        }
    };
    assert!(
        (ns(shown) - want).abs() <= want * 0.01,
        "{line}: baseline shows {shown}, the min-cost p99.9 is {want}"
    );
}
