//! `--cost simulated` end to end, under valgrind (`scripts/install-test-tools.sh` installs it):
//! the figures repeat exactly, a build doing 2 % more work per call is flagged by `diff` and
//! `paired` at the 1 % default, an unchanged one is not, and inputs it cannot honour are
//! refused naming the flag.

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_tickwheel-loadgen");

/// A small workload (a few seconds per implementation under callgrind).
const SMALL: [&str; 10] = [
    "--connections",
    "2000",
    "--rate",
    "20000",
    "--duration",
    "1s",
    "--idle-timeout",
    "500ms",
    "--request-timeout",
    "30ms",
];

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `compare --cost simulated` on [`SMALL`] with `extra` flags into `out`; its stdout.
fn simulate(out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "compare",
        "--cost",
        "simulated",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(&SMALL);
    args.extend_from_slice(extra);
    let output = run(&args);
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    stdout
}

fn report(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json written");
    serde_json::from_str(&text).expect("valid JSON")
}

fn diff(base: &Path, head: &Path) -> Output {
    run(&[
        "diff",
        base.join("report.json").to_str().unwrap(),
        head.join("report.json").to_str().unwrap(),
    ])
}

#[test]
fn figures_repeat_exactly_and_a_2_percent_slower_build_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let (first, again, slow) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    let stdout = simulate(&first, &[]);
    assert!(
        stdout.contains("simulated cost per call (callgrind;"),
        "{stdout}"
    );
    assert!(
        stdout.contains("cycles = Ir + 10 × L1 misses + 100 × LL misses"),
        "{stdout}"
    );

    let json = report(&first);
    assert_eq!(json["cost"], "simulated");
    assert_eq!(
        json["caches"],
        serde_json::json!(["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"])
    );
    assert!(json["valgrind"].as_str().unwrap().starts_with("valgrind-"));
    assert_eq!(json["workload"]["connections"], 2000);
    let results = json["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["timer"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hashed", "hierarchical", "heap", "lazy-heap"]);
    let calls = |r: &serde_json::Value| {
        r["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c[0].as_str().unwrap().to_string(),
                    c[1]["calls"].as_u64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    for r in results {
        // The same seed makes the same inserts, cancels and resets on every implementation.
        assert_eq!(calls(r)[..3], calls(&results[0])[..3], "{}", r["timer"]);
        assert_eq!(r["early_fires"], 0);
        assert!(r["fired"].as_u64().unwrap() > 0);
        let total = &r["total"];
        let n = total["calls"].as_u64().unwrap();
        // Every call runs some instructions; far fewer than a thousand on average here.
        let per_call = total["instructions"].as_u64().unwrap() as f64 / n as f64;
        assert!(
            (5.0..1_000.0).contains(&per_call),
            "{}: {per_call}",
            r["timer"]
        );
        assert!(total["l1_misses"].as_u64().unwrap() > 0);
    }
    let kinds: Vec<String> = calls(&results[0]).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        ["insert", "cancel", "reset", "poll", "next_deadline"]
    );
    assert!(calls(&results[0]).iter().all(|&(_, n)| n > 0));

    // The same build, seed and flags, given in another order from another working directory:
    // the same figures, to the last miss.
    let mut args = vec!["compare", "--out", again.to_str().unwrap()];
    for pair in SMALL.chunks(2).rev() {
        args.extend_from_slice(pair);
    }
    args.extend(["--cost", "simulated"]);
    let output = Command::new(BIN)
        .args(&args)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(report(&again)["results"], json["results"]);
    let same = diff(&first, &again);
    assert_eq!(same.status.code(), Some(0), "{}", text(&same.stdout));
    assert_eq!(
        text(&same.stdout)
            .matches(": ok (all calls +0.00 %)")
            .count(),
        4
    );

    // Two in every hundred typical calls' work more: every implementation flagged.
    let stdout = simulate(&slow, &["--slowdown", "1.02"]);
    assert!(stdout.contains("lazy-heap"), "{stdout}");
    let flagged = diff(&first, &slow);
    let verdicts = text(&flagged.stdout);
    assert_eq!(flagged.status.code(), Some(1), "{verdicts}");
    for timer in ["hashed", "hierarchical", "heap", "lazy-heap"] {
        let line = verdicts
            .lines()
            .find(|l| l.starts_with(&format!("verdict {timer}: ")))
            .unwrap_or_else(|| panic!("{verdicts}"));
        assert!(line.contains("all calls REGRESSION +"), "{line}");
    }
    // A simulated report and a wall-clock one do not compare.
    let wall = dir.path().join("wall");
    let mut args = vec![
        "run",
        "--timer",
        "heap",
        "--repeat",
        "1",
        "--out",
        wall.to_str().unwrap(),
    ];
    args.extend_from_slice(&SMALL);
    assert_eq!(run(&args).status.code(), Some(0));
    let mixed = diff(&first, &wall);
    assert_eq!(mixed.status.code(), Some(2));
    assert!(text(&mixed.stderr).contains("do not compare"));
}

#[test]
fn paired_runs_each_build_once_and_names_what_grew() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("paired");
    let mut args = vec![
        "paired",
        "--cost",
        "simulated",
        "--base",
        BIN,
        "--out",
        out.to_str().unwrap(),
        "--",
        "run",
        "--timer",
        "hierarchical",
    ];
    args.extend_from_slice(&SMALL);
    let same = run(&args);
    let stdout = text(&same.stdout);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{stdout}{}",
        text(&same.stderr)
    );
    assert!(
        stdout.contains("verdict hierarchical: ok (all calls +0.00 %)"),
        "{stdout}"
    );
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("paired.json")).unwrap()).unwrap();
    assert_eq!(verdict["cost"], "simulated");
    assert_eq!(verdict["tolerance"], 0.01);
    assert!(out.join("base/report.json").is_file() && out.join("head/report.json").is_file());
}

#[test]
fn inputs_it_cannot_honour_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for (extra, message) in [
        (vec!["--clock", "real"], "--clock real and --service"),
        (vec!["--record", out], "--record it with --cost wall"),
        (
            vec!["--max-cost", "insert.p99=1us"],
            "--max-lateness and --max-cost",
        ),
    ] {
        let mut args = vec!["compare", "--cost", "simulated", "--out", out];
        args.extend_from_slice(&extra);
        let output = run(&args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(message), "{extra:?}: {stderr}");
    }
    // No valgrind on PATH: a clear error saying how to install it.
    let output = Command::new(BIN)
        .args(["compare", "--cost", "simulated", "--out", out])
        .env("PATH", dir.path())
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("apt-get install valgrind"), "{stderr}");
}
