//! The binary end to end: exit codes, messages, and the files a run leaves behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_tickwheel-loadgen");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A small, fast virtual workload.
fn small(out: &Path) -> Vec<String> {
    [
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
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([out.display().to_string()])
    .collect()
}

fn with(base: &[&str], extra: &[String]) -> Vec<String> {
    base.iter()
        .map(|s| s.to_string())
        .chain(extra.iter().cloned())
        .collect()
}

fn run_owned(args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args)
}

fn report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json written");
    assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn bad_input_fails_fast_with_exit_2_and_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let unwritable = file.join("out").display().to_string();
    let out = dir.path().join("never").display().to_string();
    let out_refused = format!("--out {unwritable}: creating the directory failed");
    let record_refused = format!("--record {unwritable}: creating the directory failed");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["compare", "--rate", "0"], "--rate must be a positive"),
        (vec!["compare", "--rate", "-5"], "--rate must be a positive"),
        (vec!["compare", "--rate=-5"], "--rate must be a positive"),
        (
            vec!["compare", "--duration", "500us"],
            "shorter than one --tick",
        ),
        (
            vec!["compare", "--duration", "1ms", "--tick", "2ms"],
            "shorter than one --tick",
        ),
        (
            vec!["compare", "--request-timeout", "0s"],
            "--request-timeout must be positive",
        ),
        (
            vec!["compare", "--idle-timeout", "0ms"],
            "--idle-timeout must be positive",
        ),
        (
            vec!["compare", "--slow-fraction", "1.5"],
            "must be in [0, 1]",
        ),
        (
            vec!["compare", "--slow-fraction", "-0.1"],
            "must be in [0, 1]",
        ),
        (
            vec!["compare", "--tick", "0ns"],
            "--tick must be at least 1ns",
        ),
        (
            vec!["compare", "--connections", "0"],
            "--connections must be in",
        ),
        (vec!["compare", "--duration", "30"], "no unit"),
        (vec!["run", "--timer", "splay"], "unknown timer `splay`"),
        (vec!["run"], "--timer"),
        (
            vec!["compare", "--max-lateness", "p42=1ms"],
            "--max-lateness `p42=1ms`",
        ),
        (
            vec!["compare", "--max-cost", "insert.p99=fast"],
            "--max-cost `insert.p99=fast`",
        ),
        (
            vec!["compare", "--max-cost", "idle.p99=1ms"],
            "--max-cost `idle.p99=1ms`",
        ),
        (
            vec!["compare", "--max-cost", "fire.slowest=100ns"],
            "must be at least",
        ),
        (
            vec!["compare", "--repeat", "1", "--max-cost", "fire.slowest=1ms"],
            "needs the virtual clock",
        ),
        (
            vec![
                "compare",
                "--clock",
                "real",
                "--max-cost",
                "fire.slowest=1ms",
            ],
            "needs the virtual clock",
        ),
        (vec!["compare", "--out", &unwritable], &out_refused),
        (vec!["compare", "--record", &unwritable], &record_refused),
        (
            vec!["compare", "--duration", "1000000s"],
            "--duration 1000000s at --rate 200000 makes about",
        ),
        (
            vec!["compare", "--tick", "20s"],
            "--tick 20s is longer than the shorter timeout (200ms)",
        ),
        (vec!["compare", "--repeat", "0"], "--repeat must be in 1..="),
        (
            vec!["compare", "--repeat", "1000"],
            "--repeat must be in 1..=",
        ),
        (
            vec!["compare", "--handler-cost", "-1us"],
            "must not be negative",
        ),
        (
            vec!["compare", "--handler-cost=-5ns"],
            "must not be negative",
        ),
        (vec!["compare", "--duration", "-5s"], "must not be negative"),
        (
            vec!["compare", "--idle-timeout", "-1s"],
            "must not be negative",
        ),
        (
            vec!["compare", "--request-timeout", "-1ms"],
            "must not be negative",
        ),
        (vec!["compare", "--tick", "-1ms"], "must not be negative"),
        (
            vec!["compare", "--connections", "-5"],
            "must not be negative",
        ),
        (vec!["compare", "--seed", "-1"], "must not be negative"),
        (vec!["compare", "--repeat", "-1"], "must not be negative"),
        (vec!["compare", "--threads", "-2"], "must not be negative"),
        (
            vec!["compare", "--connections", "many"],
            "is not a whole number",
        ),
        (
            vec!["compare", "--handler-cost", "2s"],
            "--handler-cost must be at most",
        ),
        (
            vec!["compare", "--clock", "real", "--lateness", "ticks"],
            "--lateness ticks applies to the virtual clock",
        ),
    ];
    for (args, message) in cases {
        let mut args = args.clone();
        if !args.contains(&"--out") {
            args.extend(["--out", &out]);
        }
        let output = run(&args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(message),
            "{args:?}: expected `{message}` in {stderr}"
        );
        // Refused before any work: a run prints its machine line and progress first.
        assert!(
            output.stdout.is_empty(),
            "{args:?} ran load first: {}",
            text(&output.stdout)
        );
        assert!(
            !Path::new(&out).join("report.json").exists(),
            "{args:?} wrote a report"
        );
    }
}

#[test]
fn compare_writes_every_report_and_counts_agree() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_owned(&with(&["compare"], &small(dir.path())));
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    for name in [
        "hashed",
        "hierarchical",
        "heap",
        "lazy-heap",
        "PASS",
        "lateness p99.99",
        "slowest call, fastest of 3",
    ] {
        assert!(stdout.contains(name), "{name} missing from\n{stdout}");
    }
    let json = report(dir.path());
    assert_eq!(json["schema"], 2);
    assert_eq!(json["timing"]["repeat"], 3);
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        for field in [
            "timer",
            "clock",
            "scheduled",
            "cancelled",
            "reset",
            "fired",
            "early_fires",
            "overdue_at_end",
            "ops_per_sec",
            "peak_rss_bytes",
            "bytes_per_timer",
            "lateness",
        ] {
            assert!(r.get(field).is_some(), "{field} missing");
        }
        for field in [
            "unit", "p50", "p90", "p99", "p999", "p9999", "max", "count", "clamped",
        ] {
            assert!(
                r["lateness"].get(field).is_some(),
                "lateness.{field} missing"
            );
        }
        for field in ["scheduled", "cancelled", "reset", "fired"] {
            assert_eq!(
                r[field], results[0][field],
                "{field} differs for {}",
                r["timer"]
            );
        }
        let ended = ["fired", "cancelled", "overdue_at_end", "pending_at_end"]
            .iter()
            .map(|f| r[f].as_u64().unwrap())
            .sum::<u64>();
        assert_eq!(r["scheduled"].as_u64().unwrap(), ended);
        assert_eq!(r["early_fires"], 0);
        let reps = r["repetitions"].as_array().unwrap();
        assert_eq!(reps.len(), 3);
        for rep in reps {
            assert_eq!(rep["fired"], r["fired"], "repetitions agree on counts");
            assert!(rep["ops_per_sec"].as_f64().unwrap() > 0.0);
        }
        assert!(r["cost"]["insert"]["runs_p50"].as_f64().unwrap() > 0.0);
        // Each call at its fastest repetition is at most its time in any one repetition.
        for op in ["insert", "cancel", "reset", "fire"] {
            let slowest = r["slowest_call"][op].as_u64().expect("slowest_call per op");
            for rep in reps {
                assert!(slowest <= rep["cost"][op]["max"].as_u64().unwrap(), "{op}");
            }
        }
        assert!(r["slowest_call"]["idle"].is_u64());
        let timer = r["timer"].as_str().unwrap();
        for file in [
            format!("{timer}-lateness.hgrm"),
            format!("{timer}-cost.hgrm"),
            format!("{timer}.hlog"),
        ] {
            let body = std::fs::read_to_string(dir.path().join(&file)).unwrap();
            assert!(!body.is_empty(), "{file}");
        }
        let hlog = std::fs::read_to_string(dir.path().join(format!("{timer}.hlog"))).unwrap();
        // One interval per second of run time, per tag.
        assert_eq!(hlog.matches("Tag=lateness,").count(), 2, "{hlog}");
        assert_eq!(hlog.matches("Tag=cost,").count(), 2);
        assert!(hlog.contains(",HISTF"));
    }
    for svg in ["lateness.svg", "cost.svg"] {
        let body = std::fs::read_to_string(dir.path().join(svg)).unwrap();
        assert!(body.starts_with("<svg") && body.trim_end().ends_with("</svg>"));
        assert!(body.contains("lazy-heap") && !body.contains("NaN"));
    }
}

#[test]
fn crossing_a_threshold_exits_1_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    // Real-clock lateness is always above 1 ns (deadlines round up to the next tick), so this
    // line is crossed on any machine.
    let output = run(&[
        "run",
        "--timer",
        "heap",
        "--clock",
        "real",
        "--duration",
        "300ms",
        "--connections",
        "500",
        "--rate",
        "2000",
        "--request-timeout",
        "10ms",
        "--slow-fraction",
        "0.2",
        "--max-lateness",
        "p50=1ns",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL") && stdout.contains("crossed --max-lateness p50=1ns"),
        "{stdout}"
    );
    let json = report(dir.path());
    assert_eq!(json["passed"], false);
    assert_eq!(json["results"].as_array().unwrap().len(), 1);
    assert!(json["failures"][0]
        .as_str()
        .unwrap()
        .starts_with("heap: lateness"));

    let generous = with(
        &[
            "run",
            "--timer",
            "hashed",
            "--max-lateness",
            "p99.9=1s",
            "--max-cost",
            "insert.p99=1s",
        ],
        &small(dir.path()),
    );
    assert_eq!(run_owned(&generous).status.code(), Some(0));

    // `slowest` lines: a call's cost is taken at its fastest of two repetitions, and no call
    // of these timers is slow by design, so whether one crosses 1 µs depends on the machine.
    // The gate must agree with the report either way: exit 1 and name exactly the operations
    // whose slowest call (in report.json) reached the line, never the one with a 1 s line.
    let slowest = with(
        &[
            "run",
            "--timer",
            "lazy-heap",
            "--repeat",
            "2",
            "--max-cost",
            "insert.slowest=1us",
            "--max-cost",
            "cancel.slowest=1us",
            "--max-cost",
            "idle.slowest=1s",
        ],
        &small(dir.path()),
    );
    let output = run_owned(&slowest);
    let stdout = text(&output.stdout);
    let json = report(dir.path());
    let crossed: Vec<&str> = ["insert", "cancel"]
        .into_iter()
        .filter(|op| json["results"][0]["slowest_call"][op].as_u64().unwrap() >= 1_000)
        .collect();
    let code = if crossed.is_empty() { 0 } else { 1 };
    assert_eq!(output.status.code(), Some(code), "{stdout}");
    for op in ["insert", "cancel"] {
        assert_eq!(
            stdout.contains(&format!("crossed --max-cost {op}.slowest=1us")),
            crossed.contains(&op),
            "{op}: {stdout}"
        );
    }
    assert!(!stdout.contains("idle.slowest"), "{stdout}");
}

#[test]
fn an_empty_run_writes_valid_reports() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(&[
        "compare",
        "--connections",
        "1",
        "--rate",
        "0.001",
        "--duration",
        "5ms",
        "--idle-timeout",
        "1h",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json = report(dir.path());
    for r in json["results"].as_array().unwrap() {
        assert_eq!(r["fired"], 0);
        assert_eq!(r["lateness"]["count"], 0);
        assert_eq!(r["pending_at_end"], 1);
    }
    let hgrm = std::fs::read_to_string(dir.path().join("heap-lateness.hgrm")).unwrap();
    assert!(hgrm.contains("Total count    =            0") && !hgrm.contains("NaN"));
}

#[test]
fn real_clock_compare_runs_briefly() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(&[
        "compare",
        "--clock",
        "real",
        "--duration",
        "400ms",
        "--connections",
        "1000",
        "--rate",
        "5000",
        "--request-timeout",
        "20ms",
        "--slow-fraction",
        "0.1",
        "--max-lateness",
        "p50=1s",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("target / achieved req/s"), "{stdout}");
    let json = report(dir.path());
    for r in json["results"].as_array().unwrap() {
        assert_eq!(r["clock"], "real");
        assert_eq!(r["lateness"]["unit"], "ns");
        assert_eq!(r["early_fires"], 0);
        assert!(r["fired"].as_u64().unwrap() > 0);
    }
}

fn diff(baseline: &Path, current: &Path) -> Output {
    run(&[
        "diff",
        baseline.to_str().unwrap(),
        current.to_str().unwrap(),
        "--tolerance",
        "0.25",
    ])
}

#[test]
fn diff_marks_regressions_and_exits_by_them() {
    let dir = tempfile::tempdir().unwrap();
    let output = run_owned(&with(&["compare"], &small(dir.path())));
    assert_eq!(output.status.code(), Some(0));
    let baseline: PathBuf = dir.path().join("report.json");

    let same = diff(&baseline, &baseline);
    let stdout = text(&same.stdout);
    assert_eq!(same.status.code(), Some(0), "{stdout}");
    for timer in ["hashed", "hierarchical", "heap", "lazy-heap"] {
        assert!(stdout.contains(&format!("verdict {timer}: ok")), "{stdout}");
    }

    let mut worse = report(dir.path());
    let r = &mut worse["results"][1];
    // Ten times worse: beyond any spread of the repetitions, even of a debug build on a
    // loaded machine (where a preempted repetition can be twice as slow as the others).
    for rep in r["repetitions"].as_array_mut().unwrap() {
        rep["lateness"]["p99"] =
            serde_json::json!(rep["lateness"]["p99"].as_u64().unwrap() * 10 + 10);
        rep["ops_per_sec"] = serde_json::json!(rep["ops_per_sec"].as_f64().unwrap() / 10.0);
    }
    let current = dir.path().join("worse.json");
    std::fs::write(&current, serde_json::to_string(&worse).unwrap()).unwrap();
    let output = diff(&baseline, &current);
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let flagged: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("REGRESSION") && !l.starts_with("verdict"))
        .collect();
    assert!(
        flagged
            .iter()
            .any(|l| l.contains("hierarchical") && l.contains("ops_per_sec")),
        "{stdout}"
    );
    assert!(
        flagged.iter().all(|l| l.starts_with("hierarchical")),
        "{stdout}"
    );
    assert!(
        stdout.contains("verdict hierarchical: REGRESSION"),
        "{stdout}"
    );

    // Other workloads and other schemas do not compare: exit 2, naming why.
    let mut other = report(dir.path());
    other["workload"]["seed"] = serde_json::json!(43);
    let other_path = dir.path().join("other.json");
    std::fs::write(&other_path, serde_json::to_string(&other).unwrap()).unwrap();
    let output = diff(&baseline, &other_path);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr)
            .contains("different workloads, so their figures do not compare: seed 42 vs 43"),
        "{}",
        text(&output.stderr)
    );
    let mut old = report(dir.path());
    old["schema"] = serde_json::json!(1);
    let old_path = dir.path().join("old.json");
    std::fs::write(&old_path, serde_json::to_string(&old).unwrap()).unwrap();
    let output = diff(&old_path, &baseline);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("has schema 1, this tool reads schema 2"),
        "{}",
        text(&output.stderr)
    );

    let missing = diff(&baseline, &dir.path().join("nope.json"));
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("nope.json"));
    std::fs::write(dir.path().join("junk.json"), "{}").unwrap();
    let junk = diff(&baseline, &dir.path().join("junk.json"));
    assert_eq!(junk.status.code(), Some(2));
    assert!(text(&junk.stderr).contains("not a tickwheel-loadgen report"));
}

#[test]
fn help_documents_the_flags() {
    let output = run(&["compare", "--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = text(&output.stdout);
    for flag in [
        "--connections",
        "--rate",
        "--duration",
        "--idle-timeout",
        "--request-timeout",
        "--slow-fraction",
        "--tick",
        "--seed",
        "--clock",
        "--out",
        "--max-lateness",
        "--max-cost",
        "--repeat",
        "--handler-cost",
        "--lateness",
    ] {
        assert!(help.contains(flag), "{flag}");
    }
}

#[test]
fn service_mode_runs_each_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let output = run(&[
        "run",
        "--timer",
        "hierarchical",
        "--clock",
        "real",
        "--service",
        "--threads",
        "2",
        "--duration",
        "400ms",
        "--connections",
        "1000",
        "--rate",
        "4000",
        "--request-timeout",
        "20ms",
        "--slow-fraction",
        "0.1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(
        stdout.contains("hierarchical-t1") && stdout.contains("hierarchical-t2"),
        "{stdout}"
    );
    let json = report(dir.path());
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for (r, threads) in results.iter().zip([1, 2]) {
        assert_eq!(r["threads"], threads);
        assert_eq!(r["early_fires"], 0);
        assert!(r["fired"].as_u64().unwrap() > 0);
    }
    assert!(dir.path().join("hierarchical-t2.hlog").exists());

    for (args, message) in [
        (vec!["compare", "--service"], "add --clock real"),
        (
            vec!["compare", "--threads", "2"],
            "--threads only applies with --service",
        ),
        (
            vec!["compare", "--clock", "real", "--service", "--threads", "0"],
            "--threads must be in",
        ),
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            text(&output.stderr).contains(message),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
}

/// The counts two runs of one workload must agree on.
const COUNTS: [&str; 7] = [
    "scheduled",
    "cancelled",
    "reset",
    "fired",
    "late_responses",
    "overdue_at_end",
    "pending_at_end",
];

/// Replays `trace` with its reports in `out`; returns report.json.
fn replay_into(trace: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "replay",
        trace.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let replay = run(&args);
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}{}",
        text(&replay.stdout),
        text(&replay.stderr)
    );
    for file in ["lateness.svg", "cost.svg"] {
        assert!(out.join(file).is_file(), "replay wrote no {file}");
    }
    report(out)
}

/// Runs `command` (`compare`, or `run --timer NAME`) on the small workload, reports in `dir`,
/// recording its traces into `dir/<traces>`, with `extra` flags; returns the traces' folder.
fn recorded(dir: &Path, command: &[&str], traces: &str, extra: &[&str]) -> PathBuf {
    let traces = dir.join(traces);
    let mut args: Vec<&str> = command.to_vec();
    args.extend(["--repeat", "1", "--record", traces.to_str().unwrap()]);
    args.extend(extra);
    let output = run_owned(&with(&args, &small(dir)));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    traces
}

#[test]
fn a_recorded_compare_replays_with_the_same_counts_on_all_four() {
    let dir = tempfile::tempdir().unwrap();
    let traces = recorded(dir.path(), &["compare"], "t", &[]);
    let json = report(dir.path());
    for r in json["results"].as_array().unwrap() {
        let timer = r["timer"].as_str().unwrap();
        let trace = traces.join(format!("{timer}.trace"));
        let out = dir.path().join(format!("replay-{timer}"));
        let replayed = replay_into(&trace, &out, &[]);
        assert_eq!(replayed["command"], "replay");
        let results = replayed["results"].as_array().unwrap();
        assert_eq!(results.len(), 4);
        for got in results {
            let kind = got["timer"].as_str().unwrap();
            for field in COUNTS {
                assert_eq!(
                    got[field], r[field],
                    "{kind} replaying {timer}'s trace: {field}"
                );
            }
            assert!(out.join(format!("{kind}.hlog")).is_file());
            assert!(out.join(format!("{kind}-lateness.hgrm")).is_file());
        }
    }
}

#[test]
fn diff_compares_replays_of_one_trace_and_refuses_other_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let traces = recorded(dir.path(), &["run", "--timer", "heap"], "t", &[]);
    let trace = traces.join("heap.trace");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let first = replay_into(&trace, &a, &["--repeat", "2"]);
    let second = replay_into(&trace, &b, &["--repeat", "2"]);
    assert_eq!(first["workload"], second["workload"]);
    // Two replays or more: the headline lateness is the charged pass's, as in `compare`, at
    // most the lateness as measured, percentile by percentile.
    assert_eq!(first["timing"]["lateness_costs"], "min");
    let shown = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--repeat",
        "2",
        "--out",
        dir.path().join("shown").to_str().unwrap(),
    ]);
    let stdout = text(&shown.stdout);
    assert!(
        stdout.contains("lateness shown: min-cost")
            && stdout.contains("report.json keeps the lateness as measured too")
            && !stdout.contains("--lateness-costs"),
        "{stdout}"
    );
    for r in first["results"].as_array().unwrap() {
        let (min, measured) = (&r["lateness_min_cost"], &r["lateness_measured"]);
        assert_eq!(&r["lateness"], min, "{}", r["timer"]);
        assert_eq!(min["count"], measured["count"]);
        for p in ["p50", "p90", "p99", "p999"] {
            assert!(
                min[p].as_u64() <= measured[p].as_u64(),
                "{} {p}",
                r["timer"]
            );
        }
    }
    // Two runs' peak RSS can differ by more than the default memory tolerance: left out.
    let diff = run(&[
        "diff",
        a.join("report.json").to_str().unwrap(),
        b.join("report.json").to_str().unwrap(),
        "--tolerance",
        "100",
        "--memory-tolerance",
        "100",
    ]);
    let stdout = text(&diff.stdout);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "{stdout}{}",
        text(&diff.stderr)
    );
    assert!(stdout.contains("hierarchical    scheduled"), "{stdout}");

    // A replay against the run it came from: another workload, so exit 2 naming the trace.
    let diff = run(&[
        "diff",
        dir.path().join("report.json").to_str().unwrap(),
        a.join("report.json").to_str().unwrap(),
    ]);
    let stderr = text(&diff.stderr);
    assert_eq!(diff.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no trace vs trace heap.trace"), "{stderr}");

    // Another trace (another seed) of the same shape: exit 2, naming the checksums.
    let other = recorded(
        dir.path(),
        &["run", "--timer", "heap"],
        "t2",
        &["--seed", "7"],
    );
    let reseeded = other.join("heap.trace");
    let c = dir.path().join("c");
    replay_into(&reseeded, &c, &[]);
    let diff = run(&[
        "diff",
        a.join("report.json").to_str().unwrap(),
        c.join("report.json").to_str().unwrap(),
    ]);
    let stderr = text(&diff.stderr);
    assert_eq!(diff.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("checksum"), "{stderr}");
}

#[test]
fn a_corrupt_or_truncated_trace_exits_2_naming_the_byte() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("t");
    let mut args = with(
        &[
            "run",
            "--timer",
            "heap",
            "--repeat",
            "1",
            "--record",
            traces.to_str().unwrap(),
        ],
        &small(dir.path()),
    );
    let at = args.iter().position(|a| a == "--duration").unwrap() + 1;
    args[at] = "200ms".into();
    let output = run_owned(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let good = std::fs::read(traces.join("heap.trace")).unwrap();
    assert!(good.len() > 1_000, "a trace of {} bytes", good.len());
    let bad = dir.path().join("bad.trace");
    // A corpus: cuts at every 97th byte and in the header, and flips spread over the file.
    let mut cases: Vec<Vec<u8>> = (0..good.len())
        .step_by(97)
        .map(|n| good[..n].to_vec())
        .collect();
    cases.extend([0, 5, 27, 28].map(|n| good[..n].to_vec()));
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..40 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let mut c = good.clone();
        let at = (state >> 33) as usize % c.len();
        c[at] ^= ((state >> 20) as u8) | 1;
        cases.push(c);
    }
    let mut appended = good.clone();
    appended.push(0);
    cases.push(appended);
    for case in &cases {
        std::fs::write(&bad, case).unwrap();
        let replay = run(&["replay", "--timer", "hierarchical", bad.to_str().unwrap()]);
        let stderr = text(&replay.stderr);
        assert_eq!(
            replay.status.code(),
            Some(2),
            "{} bytes: {stderr}",
            case.len()
        );
        assert!(
            stderr.contains("byte") || stderr.contains("version"),
            "no offset in: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let missing = run(&["replay", dir.path().join("none.trace").to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn a_trace_the_timers_disagree_with_exits_1_naming_the_call() {
    use tickwheel::trace::Recorder;
    use tickwheel::{FromOptions, IndexedHeap, Options, Timer};
    // Recorded on a timer with room for one: its second insert was refused, which an
    // unbounded replay accepts.
    let timer = IndexedHeap::<u64>::from_options(Options::new().capacity(1)).unwrap();
    let mut r = Recorder::new(timer, Vec::new(), Duration::from_millis(1));
    r.insert(10, 0).unwrap();
    assert!(r.insert(20, 1).is_err());
    let bytes = r.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capacity.trace");
    std::fs::write(&path, bytes).unwrap();
    let out = dir.path().join("out");
    let replay = run(&[
        "replay",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = text(&replay.stderr);
    assert_eq!(replay.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("byte 31") && stderr.contains("accepted"),
        "{stderr}"
    );
}

#[test]
fn profiles_cite_their_sources_and_flags_override_them() {
    let help = text(&run(&["compare", "--help"]).stdout);
    for needle in [
        "http-keepalive",
        "nginx",
        "rpc-deadlines",
        "tcp-rto",
        "TCP_RTO_MIN",
        "session-keepalive",
        "Paho",
        "herd",
        "all",
    ] {
        assert!(
            help.contains(needle),
            "{needle} missing from --help:\n{help}"
        );
    }
    let unknown = run(&["compare", "--profile", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        text(&unknown.stderr).contains("http-keepalive"),
        "{}",
        text(&unknown.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let all_on_run = run(&["run", "--timer", "heap", "--profile", "all", "--out", out]);
    assert_eq!(all_on_run.status.code(), Some(2));
    assert!(text(&all_on_run.stderr).contains("compare alone"));

    // The herd, scaled down: every first idle timer on one deadline, 10 s out.
    let herd = run(&[
        "compare",
        "--profile",
        "herd",
        "--connections",
        "5000",
        "--rate",
        "10",
        "--duration",
        "11s",
        "--repeat",
        "1",
        "--out",
        out,
    ]);
    assert_eq!(herd.status.code(), Some(0), "{}", text(&herd.stderr));
    let json = report(dir.path());
    assert_eq!(json["workload"]["profile"], "herd");
    assert_eq!(json["workload"]["herd"], true);
    assert_eq!(
        json["workload"]["connections"], 5000,
        "the flag overrides the profile"
    );
    assert_eq!(
        json["workload"]["idle_timeout_secs"], 10.0,
        "the profile's own value"
    );
    for r in json["results"].as_array().unwrap() {
        let fired = r["fired"].as_u64().unwrap();
        // 110 requests push at most 110 idle timers out of the herd.
        assert!(fired >= 4_890, "{}: the herd fires ({fired})", r["timer"]);
    }
}

/// The CI guide's own-workload recipe: record a trace, then `paired --cost simulated` replays
/// it with two builds under valgrind's cache simulator. A build doing 2 % more work per call
/// (a wrapper that adds `--slowdown 1.02`, counted busy work under the simulated cost) is
/// flagged, exit 1, naming the call kinds that grew, and `paired.json` holds each one's
/// ratio. The simulated cost repeats exactly, so the test asserts a small change and cannot
/// flake on a busy machine.
#[cfg(unix)]
#[test]
fn paired_flags_a_slower_build_replaying_a_recorded_trace() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let traces = recorded(dir.path(), &["run", "--timer", "hierarchical"], "t", &[]);
    let slow = dir.path().join("slow-build");
    std::fs::write(
        &slow,
        format!("#!/bin/sh\nexec '{BIN}' \"$@\" --slowdown 1.02\n"),
    )
    .unwrap();
    std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("paired");
    let trace = traces.join("hierarchical.trace");
    let args = [
        "paired",
        "--cost",
        "simulated",
        "--base",
        BIN,
        "--head",
        slow.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--",
        "replay",
        trace.to_str().unwrap(),
        "--timer",
        "hierarchical",
    ];
    let output = run(&args);
    let shown = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("verdict hierarchical: ") && shown.contains("all calls REGRESSION +"),
        "{shown}"
    );
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("paired.json")).unwrap()).unwrap();
    let all = verdict["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["call"] == "all calls")
        .unwrap();
    let ratio = all["ratio"].as_f64().unwrap();
    assert!((1.01..1.10).contains(&ratio), "{all}");
    for side in ["base", "head"] {
        assert!(
            out.join(side).join("report.json").is_file(),
            "no {side} report"
        );
    }
    // Bad input: no command after `--`.
    let bad = run(&["paired", "--base", BIN, "--out", out.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
}

/// The memory row says what the timers use. A long request timeout makes the repetitions'
/// preallocation (room for every deadline a timeout could hold) more than twice the live
/// timers: with a charged pass (`--repeat 2`) the figure is the pass's own, on storage grown as
/// needed, and clearly below the preallocated one that one repetition shows (and says it
/// shows, with no memory pick). Allocated bytes follow the calls alone, so on the virtual clock
/// both figures are the same in every run.
#[test]
fn memory_is_what_the_timers_use_not_the_preallocation() {
    let mut figures = Vec::new();
    for repeat in ["2", "1"] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = with(&["compare", "--repeat", repeat], &small(dir.path()));
        let timeout = args.iter().position(|a| a == "--request-timeout").unwrap();
        args[timeout + 1] = "30s".into();
        let output = run_owned(&args);
        let stdout = text(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{stdout}{}",
            text(&output.stderr)
        );
        let json = report(dir.path());
        let results = json["results"].as_array().unwrap();
        for r in results {
            assert_eq!(
                r["bytes_grown"].as_bool(),
                Some(repeat == "2"),
                "{}",
                r["timer"]
            );
            // What the timers hold at the peak fits in what the process held then.
            let held = r["bytes_per_timer"].as_f64().unwrap() * r["peak_live"].as_f64().unwrap();
            if let (true, Some(rss)) = (repeat == "2", r["peak_rss_bytes"].as_f64()) {
                assert!(
                    held <= rss,
                    "{}: {held} B of timers, {rss} B peak RSS",
                    r["timer"]
                );
            }
        }
        figures.push(
            results
                .iter()
                .map(|r| {
                    (
                        r["timer"].to_string(),
                        r["bytes_per_timer"].as_f64().unwrap(),
                    )
                })
                .collect::<Vec<_>>(),
        );
        if repeat == "2" {
            assert!(stdout.contains("  memory per timer"), "{stdout}");
        } else {
            assert!(
                stdout.contains("bytes per live timer (preallocated)"),
                "{stdout}"
            );
            assert!(!stdout.contains("  memory per timer"), "{stdout}");
            assert!(stdout.contains("(memory: storage preallocated"), "{stdout}");
        }
    }
    for ((timer, grown), (_, preallocated)) in figures[0].iter().zip(&figures[1]) {
        assert!(
            *grown < 100.0 && *grown < 0.9 * preallocated,
            "{timer}: {grown:.1} B grown, {preallocated:.1} B preallocated"
        );
    }
}
