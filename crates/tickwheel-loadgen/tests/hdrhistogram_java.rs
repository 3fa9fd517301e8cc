//! HdrHistogram's own Java tools read the loadgen's files as their own: for each tag of
//! `<timer>.hlog`, `HistogramLogProcessor` (2.1.11, Debian's `libhdrhistogram-java`; it reads
//! the log with `HistogramLogReader`) writes a percentile distribution that must equal
//! `<timer>-<tag>.hgrm` line for line, and reads every interval at the right time.
//!
//! Needs `java` on `PATH` and the jar (`HDRHISTOGRAM_JAR`, default
//! `/usr/share/java/hdrhistogram.jar`): `scripts/install-test-tools.sh` installs both, and CI
//! runs it. Without them the test fails where `apt-get` could install them, and is skipped,
//! saying so on stderr, where it could not.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_tickwheel-loadgen");
const DEFAULT_JAR: &str = "/usr/share/java/hdrhistogram.jar";

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The jar, once `java` and the jar are both there; `None` when the test must be skipped.
fn tools() -> Option<PathBuf> {
    let jar = std::env::var_os("HDRHISTOGRAM_JAR")
        .map_or_else(|| PathBuf::from(DEFAULT_JAR), PathBuf::from);
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if java && jar.is_file() {
        return Some(jar);
    }
    let missing = match (java, jar.is_file()) {
        (false, false) => format!("java and {}", jar.display()),
        (false, true) => "java".to_string(),
        _ => jar.display().to_string(),
    };
    assert!(
        !on_path("apt-get"),
        "{missing} missing: run scripts/install-test-tools.sh (it installs a Java runtime and \
         libhdrhistogram-java with apt-get)"
    );
    // Straight to the process's stderr: the test harness captures `eprintln!`.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: hdrhistogram_java: {missing} missing and no apt-get to install them; \
         HdrHistogram's Java tools did not check the .hgrm and .hlog files"
    );
    None
}

/// Runs the loadgen; returns the output directory.
fn loadgen(dir: &Path, timer: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(timer);
    let args = [
        "run",
        "--timer",
        timer,
        "--connections",
        "2000",
        "--rate",
        "20000",
        "--idle-timeout",
        "500ms",
        "--request-timeout",
        "30ms",
        "--slow-fraction",
        "0.05",
    ];
    let output = Command::new(BIN)
        .args(args)
        .args(extra)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("loadgen runs");
    assert!(
        output.status.success(),
        "loadgen {extra:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// `HistogramLogProcessor` on one tag, values unscaled (ns stay ns): its `.hgrm` and its
/// interval table.
fn log_processor(jar: &Path, hlog: &Path, tag: &str, out: &Path) -> (String, String) {
    let output = Command::new("java")
        .arg("-cp")
        .arg(jar)
        .arg("org.HdrHistogram.HistogramLogProcessor")
        .arg("-i")
        .arg(hlog)
        .arg("-o")
        .arg(out)
        .args(["-tag", tag, "-outputValueUnitRatio", "1"])
        .output()
        .expect("java runs");
    assert!(
        output.status.success(),
        "HistogramLogProcessor -tag {tag}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    (read(out.with_extension("hgrm")), read(out.to_path_buf()))
}

/// Everything after the leading `#` comment lines (Java writes its own, the loadgen its unit).
fn body(hgrm: &str) -> Vec<&str> {
    hgrm.lines().skip_while(|l| l.starts_with('#')).collect()
}

fn total_count(hgrm: &str) -> u64 {
    let line = hgrm
        .lines()
        .find(|l| l.starts_with("#[Max"))
        .unwrap_or_else(|| panic!("no #[Max line in\n{hgrm}"));
    let (_, count) = line
        .split_once("Total count    =")
        .expect("Total count field");
    count.trim_end_matches(']').trim().parse().expect("a count")
}

/// Seconds of the `#[StartTime: ...]` line.
fn start_time(text: &str) -> &str {
    let line = text
        .lines()
        .find(|l| l.starts_with("#[StartTime: "))
        .unwrap_or_else(|| panic!("no StartTime line in\n{text}"));
    line["#[StartTime: ".len()..]
        .split(' ')
        .next()
        .expect("seconds")
}

/// Java's interval table against the log: one row per interval of the tag, at its end time
/// relative to the start, the running total ending at the distribution's count.
fn check_intervals(hlog: &str, tag: &str, table: &str, java_total: u64, what: &str) {
    let ends: Vec<f64> = hlog
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("Tag={tag},")))
        .map(|l| {
            let f: Vec<f64> = l.split(',').take(2).map(|x| x.parse().unwrap()).collect();
            f[0] + f[1]
        })
        .collect();
    // Rows: "1.000: I:2490 ( ... ) T:2490 ( ... )".
    let rows: Vec<(f64, u64)> = table
        .lines()
        .filter(|l| l.contains(": I:"))
        .map(|l| {
            let time = l.split(':').next().unwrap().parse().unwrap();
            let total = l.split("T:").nth(1).unwrap().split(' ').next().unwrap();
            (time, total.parse().unwrap())
        })
        .collect();
    assert_eq!(
        rows.len(),
        ends.len(),
        "{what}: Java read {} of the log's intervals\n{table}",
        rows.len()
    );
    for ((time, _), end) in rows.iter().zip(&ends) {
        assert!(
            (time - end).abs() < 0.0015,
            "{what}: Java's interval ends at {time}, the log's at {end}\n{table}"
        );
    }
    assert_eq!(
        rows.last().map_or(0, |r| r.1),
        java_total,
        "{what}\n{table}"
    );
    assert_eq!(
        start_time(table),
        start_time(hlog),
        "{what}: Java read another start time"
    );
}

/// Every tag of the run's log, through Java, equals the loadgen's own `.hgrm` of that tag.
fn check_run(jar: &Path, out: &Path, timer: &str) {
    let hlog_path = out.join(format!("{timer}.hlog"));
    let hlog = std::fs::read_to_string(&hlog_path).unwrap();
    for tag in ["lateness", "cost"] {
        let what = format!("{timer} {tag}");
        let ours = std::fs::read_to_string(out.join(format!("{timer}-{tag}.hgrm"))).unwrap();
        let (java, table) = log_processor(jar, &hlog_path, tag, &out.join(format!("java-{tag}")));
        check_intervals(&hlog, tag, &table, total_count(&java), &what);
        assert_eq!(
            total_count(&java),
            total_count(&ours),
            "{what}: the .hlog's intervals (read by Java) and the .hgrm count different totals"
        );
        let (java_body, our_body) = (body(&java), body(&ours));
        for (i, (j, o)) in java_body.iter().zip(&our_body).enumerate() {
            assert_eq!(
                o,
                j,
                "{what}: line {} after the header comments differs (left: ours, right: Java's)",
                i + 1
            );
        }
        assert_eq!(
            our_body.len(),
            java_body.len(),
            "{what}: ours has {} lines, Java's {}\n{ours}\n{java}",
            our_body.len(),
            java_body.len()
        );
        assert!(our_body.len() > 5, "{what}: no rows\n{ours}");
    }
}

#[test]
fn java_log_processor_reads_the_hlog_into_the_same_percentiles_as_the_hgrm() {
    let Some(jar) = tools() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Tags are what the processor selects by: both present.
    let virtual_out = loadgen(
        dir.path(),
        "hierarchical",
        // Seed 42 has timers that fire at exactly t = --duration: the last interval holds them.
        &["--duration", "2s", "--seed", "42"],
    );
    let listed = Command::new("java")
        .arg("-cp")
        .arg(&jar)
        .args(["org.HdrHistogram.HistogramLogProcessor", "-listtags", "-i"])
        .arg(virtual_out.join("hierarchical.hlog"))
        .output()
        .expect("java runs");
    let listed = String::from_utf8_lossy(&listed.stdout);
    let tags: Vec<&str> = listed.lines().skip(1).map(str::trim).collect();
    assert!(
        tags.contains(&"lateness") && tags.contains(&"cost"),
        "{listed}"
    );
    check_run(&jar, &virtual_out, "hierarchical");

    // The real clock: lateness in ns, many distinct values.
    let real_out = loadgen(
        dir.path(),
        "lazy-heap",
        &["--clock", "real", "--duration", "1s"],
    );
    check_run(&jar, &real_out, "lazy-heap");
}
