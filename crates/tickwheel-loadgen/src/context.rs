//! The machine and build a report was made on: CPU model, cores, load average at the start and
//! end of the run, host, start time, the build's version, commit and compiler, and the
//! repetitions. Timings from two machines compare only loosely, and a loaded machine inflates
//! them; this is what lets a reader of `report.json`, or `diff`, see either.
//!
//! It imports nothing from the crate. Every figure is best effort: what the system does not
//! tell is `unknown` (the CPU model) or `null`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// `report.json`'s `context`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub(crate) struct Context {
    /// `/proc/cpuinfo`'s first `model name`, or `unknown`.
    pub(crate) cpu_model: String,
    /// `std::thread::available_parallelism` (1 when unknown).
    pub(crate) cores: usize,
    /// The 1-minute load average when the run started (`/proc/loadavg`).
    pub(crate) load_start: Option<f64>,
    /// The 1-minute load average when the run ended.
    pub(crate) load_end: Option<f64>,
    /// `/proc/sys/kernel/hostname`, else `$HOSTNAME`.
    pub(crate) hostname: Option<String>,
    /// When the run started, RFC 3339 in UTC, to the second.
    pub(crate) started: String,
    /// The tickwheel workspace version this tool was built from.
    pub(crate) tickwheel_version: String,
    /// The commit it was built from (`-dirty` with uncommitted changes), when built from a
    /// git checkout.
    pub(crate) git_commit: Option<String>,
    /// `rustc --version` of the compiler that built it.
    pub(crate) rustc: Option<String>,
    /// Repetitions of each implementation (`--repeat`).
    pub(crate) repeat: u32,
    /// The `--slowdown` test hook's factor, when it was on: the figures are then a build's
    /// that much slower.
    pub(crate) slowdown: Option<f64>,
}

/// `value`, or `unknown`.
fn known(value: &Option<String>) -> String {
    value.clone().unwrap_or_else(|| "unknown".into())
}

/// A build-time value: `None` when the build script left it empty.
fn built(value: &str) -> Option<String> {
    Some(value.to_string()).filter(|v| !v.is_empty())
}

impl Context {
    /// The context at the start of a run of `repeat` repetitions; [`Context::finish`] adds the
    /// load at its end.
    pub(crate) fn start(repeat: u32) -> Self {
        Self {
            cpu_model: cpu_model().unwrap_or_else(|| "unknown".into()),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            load_start: load_average(),
            load_end: None,
            hostname: hostname(),
            started: rfc3339_utc(SystemTime::now()),
            tickwheel_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: built(env!("TICKWHEEL_GIT_COMMIT")),
            rustc: built(env!("TICKWHEEL_RUSTC_VERSION")),
            repeat,
            slowdown: None,
        }
    }

    /// Notes the `--slowdown` test hook's factor (1: off).
    pub(crate) fn with_slowdown(mut self, factor: f64) -> Self {
        self.slowdown = (factor > 1.0).then_some(factor);
        self
    }

    /// Records the load average at the end of the run.
    pub(crate) fn finish(mut self) -> Self {
        self.load_end = load_average();
        self
    }

    /// The one line the table prints: CPU, cores, load start → end, build, and the slowdown
    /// test hook when it was on.
    pub(crate) fn line(&self) -> String {
        let slowdown = self.slowdown.map_or(String::new(), |f| {
            format!("; every timer call slowed {f}× (--slowdown test hook)")
        });
        format!(
            "machine: {}, {} core{}, load {}; tickwheel {} ({}){slowdown}",
            self.cpu_model,
            self.cores,
            if self.cores == 1 { "" } else { "s" },
            self.load(),
            self.tickwheel_version,
            self.build()
        )
    }

    /// `0.52 → 1.10`, `unknown` for a figure the system did not give.
    fn load(&self) -> String {
        let shown = |v: Option<f64>| v.map_or("unknown".into(), |v| format!("{v:.2}"));
        format!("{} → {}", shown(self.load_start), shown(self.load_end))
    }

    /// The commit, or that it is unknown.
    fn build(&self) -> String {
        match &self.git_commit {
            Some(commit) => format!("commit {commit}"),
            None => "commit unknown".into(),
        }
    }

    /// The rows `diff` shows side by side: a label and the value.
    fn rows(&self) -> Vec<(&'static str, String)> {
        vec![
            ("cpu", self.cpu_model.clone()),
            ("cores", self.cores.to_string()),
            ("load (1 min) start → end", self.load()),
            ("host", known(&self.hostname)),
            ("started", self.started.clone()),
            ("tickwheel", self.tickwheel_version.clone()),
            ("commit", known(&self.git_commit)),
            ("rustc", known(&self.rustc)),
            ("repeat", self.repeat.to_string()),
            (
                "slowdown (test hook)",
                self.slowdown.map_or("off".into(), |f| format!("{f}×")),
            ),
        ]
    }
}

/// The two reports' contexts side by side, for `diff`, a `*` marking each row that differs; a
/// report without one (written before reports had it) reads `not recorded`. Ends with
/// [`mismatch`]'s warning when there is one.
pub(crate) fn side_by_side(baseline: Option<&Context>, current: Option<&Context>) -> String {
    const LABEL: usize = 26;
    let absent = || {
        Context::default()
            .rows()
            .into_iter()
            .map(|(label, _)| (label, "not recorded".to_string()))
            .collect::<Vec<_>>()
    };
    let base = baseline.map_or_else(absent, Context::rows);
    let cur = current.map_or_else(absent, Context::rows);
    let width = base
        .iter()
        .map(|(_, v)| v.chars().count())
        .max()
        .unwrap_or(0)
        .max("baseline".len())
        + 3;
    let mut out = format!("{:<LABEL$}{:<width$}current\n", "machine", "baseline");
    for ((label, b), (_, c)) in base.iter().zip(&cur) {
        let both = baseline.is_some() && current.is_some();
        let mark = if both && b != c { "  *" } else { "" };
        out.push_str(&format!("{label:<LABEL$}{b:<width$}{c}{mark}\n"));
    }
    if let Some(warning) = mismatch(baseline, current) {
        out.push_str(&warning);
        out.push('\n');
    }
    out
}

/// A warning line when the two reports ran on different CPU models or core counts, whose
/// timings then compare only loosely; `None` when they agree or either is not recorded.
pub(crate) fn mismatch(baseline: Option<&Context>, current: Option<&Context>) -> Option<String> {
    let (b, c) = (baseline?, current?);
    let mut differs = Vec::new();
    if b.cpu_model != c.cpu_model {
        differs.push(format!("cpu `{}` vs `{}`", b.cpu_model, c.cpu_model));
    }
    if b.cores != c.cores {
        differs.push(format!("{} vs {} cores", b.cores, c.cores));
    }
    if differs.is_empty() {
        return None;
    }
    Some(format!(
        "warning: the reports ran on different machines ({}): timing differences may be the \
         machine's, not the code's",
        differs.join(", ")
    ))
}

/// The first `model name` of `/proc/cpuinfo`.
fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(key, _)| key.trim() == "model name")
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The 1-minute load average, the first field of `/proc/loadavg`.
fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
}

/// The host's name: the kernel's, else `$HOSTNAME`.
fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

/// Days since 1970-01-01 as a civil date (year, month 1–12, day 1–31) of the proleptic
/// Gregorian calendar. Written out here rather than with a date crate: `report.json`'s start
/// time and the `.hlog` header are the only dates the tool prints.
pub(crate) fn civil_date(days: u64) -> (u64, u64, u64) {
    // Shift to eras of 400 years starting on 0000-03-01, so that the leap day ends each year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    (year_of_era + era * 400 + u64::from(month <= 2), month, day)
}

/// `t` as RFC 3339 in UTC to the second, e.g. `2024-02-29T13:05:09Z`.
pub(crate) fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_dates_in_rfc3339() {
        let at = |secs: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(at(951_868_800), "2000-03-01T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(1_709_211_909), "2024-02-29T13:05:09Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(at(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(at(253_402_300_799), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn this_machine_has_a_context() {
        let c = Context::start(3).finish();
        assert!(c.cores >= 1);
        assert_eq!(c.repeat, 3);
        assert!(!c.cpu_model.is_empty());
        assert_eq!(c.started.len(), "2024-02-29T13:05:09Z".len());
        assert!(c.line().contains("core"), "{}", c.line());
        assert!(!c.line().contains("slowed"));
        assert!(c.clone().with_slowdown(1.0).slowdown.is_none());
        let slow = c.with_slowdown(1.3);
        assert!(slow.line().contains("slowed 1.3×"), "{}", slow.line());
        assert!(side_by_side(Some(&Context::start(3)), Some(&slow)).contains("1.3×  *"));
    }

    #[test]
    fn different_machines_are_flagged_and_missing_contexts_read_as_not_recorded() {
        let a = Context {
            cpu_model: "A".into(),
            cores: 2,
            ..Context::default()
        };
        let b = Context {
            cpu_model: "B".into(),
            cores: 4,
            ..a.clone()
        };
        assert_eq!(mismatch(Some(&a), Some(&a)), None);
        let warning = mismatch(Some(&a), Some(&b)).unwrap();
        assert!(
            warning.contains("`A` vs `B`") && warning.contains("2 vs 4 cores"),
            "{warning}"
        );
        assert!(side_by_side(Some(&a), Some(&b)).contains(&warning));
        assert_eq!(mismatch(None, Some(&b)), None);
        assert!(side_by_side(None, Some(&b)).contains("not recorded"));
    }
}
