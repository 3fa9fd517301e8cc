//! Judging one simulated report against another, per implementation and call kind: what
//! `paired --cost simulated` and `diff` of two simulated reports print.

use serde::Serialize;

use super::{Report, MODEL};
use crate::error::Error;

/// One implementation and call kind, judged: base and head cycles per call.
#[derive(Debug, Serialize)]
pub(crate) struct Judged {
    pub(crate) timer: String,
    pub(crate) call: String,
    pub(crate) base: f64,
    pub(crate) head: f64,
    /// `head ÷ base`.
    pub(crate) ratio: f64,
    /// `ok`, `REGRESSION` or `COUNTS DIFFER`.
    pub(crate) verdict: &'static str,
}

/// Judges `head` against `base`: per implementation and call kind (and all calls together),
/// estimated cycles per call above `1 + tolerance` times the base's is a regression; a
/// different number of calls is `COUNTS DIFFER`.
///
/// # Errors
/// [`Error::Input`] when `head` lacks an implementation `base` has.
pub(crate) fn judge(base: &Report, head: &Report, tolerance: f64) -> Result<Vec<Judged>, Error> {
    let mut judged = Vec::new();
    for b in &base.results {
        let h = head
            .results
            .iter()
            .find(|h| h.timer == b.timer)
            .ok_or_else(|| Error::Input(format!("the report under test has no {}", b.timer)))?;
        let pairs = b
            .calls
            .iter()
            .zip(&h.calls)
            .map(|((n, bc), (_, hc))| (n.as_str(), bc, hc));
        for (call, bc, hc) in pairs.chain([("all calls", &b.total, &h.total)]) {
            if bc.calls == 0 && hc.calls == 0 {
                continue;
            }
            let (base, head) = (bc.cycles_per_call(), hc.cycles_per_call());
            let ratio = head / base.max(f64::MIN_POSITIVE);
            let verdict = if bc.calls != hc.calls {
                "COUNTS DIFFER"
            } else if ratio > 1.0 + tolerance {
                "REGRESSION"
            } else {
                "ok"
            };
            judged.push(Judged {
                timer: b.timer.clone(),
                call: call.to_string(),
                base,
                head,
                ratio,
                verdict,
            });
        }
    }
    Ok(judged)
}

/// The verdict lines: per implementation, `ok` or what grew and by how much.
pub(crate) fn render(judged: &[Judged], tolerance: f64) -> String {
    let mut s = format!(
        "simulated cost, the build under test ÷ the base, estimated cycles per call \
         ({MODEL}); above {:.3} is a regression\n",
        1.0 + tolerance
    );
    let mut timers: Vec<&str> = judged.iter().map(|j| j.timer.as_str()).collect();
    timers.dedup();
    for timer in timers {
        let bad: Vec<String> = judged
            .iter()
            .filter(|j| j.timer == timer && j.verdict != "ok")
            .map(|j| {
                format!(
                    "{} {} {:+.2} % ({:.1} → {:.1})",
                    j.call,
                    j.verdict,
                    (j.ratio - 1.0) * 100.0,
                    j.base,
                    j.head
                )
            })
            .collect();
        let all = judged
            .iter()
            .find(|j| j.timer == timer && j.call == "all calls")
            .map_or(String::new(), |j| {
                format!(" (all calls {:+.2} %)", (j.ratio - 1.0) * 100.0)
            });
        if bad.is_empty() {
            s += &format!("verdict {timer}: ok{all}\n");
        } else {
            s += &format!("verdict {timer}: {}\n", bad.join("; "));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::{Cost, Simulated};
    use super::*;
    use serde_json::Value;

    fn report(cycles: &[(&str, u64, u64)]) -> Report {
        Report {
            cost: "simulated".into(),
            tool: String::new(),
            version: String::new(),
            command: String::new(),
            valgrind: String::new(),
            caches: Vec::new(),
            model: MODEL.into(),
            workload: Value::Null,
            context: Value::Null,
            results: cycles
                .iter()
                .map(|&(timer, calls, instructions)| {
                    let cost = Cost {
                        calls,
                        instructions,
                        ..Cost::default()
                    };
                    Simulated {
                        timer: timer.into(),
                        calls: vec![("insert".into(), cost)],
                        total: cost,
                        scheduled: 0,
                        cancelled: 0,
                        reset: 0,
                        fired: 0,
                        early_fires: 0,
                    }
                })
                .collect(),
        }
    }

    #[test]
    fn growth_beyond_the_tolerance_is_a_regression_named_by_call() {
        let base = report(&[("hashed", 100, 10_000), ("heap", 100, 10_000)]);
        let head = report(&[("hashed", 100, 10_150), ("heap", 100, 10_050)]);
        let judged = judge(&base, &head, 0.01).unwrap();
        let verdict = |t: &str| judged.iter().find(|j| j.timer == t).unwrap().verdict;
        assert_eq!(verdict("hashed"), "REGRESSION");
        assert_eq!(verdict("heap"), "ok");
        let text = render(&judged, 0.01);
        assert!(
            text.contains("verdict hashed: insert REGRESSION +1.50 % (100.0 → 101.5)"),
            "{text}"
        );
        assert!(
            text.contains("verdict heap: ok (all calls +0.50 %)"),
            "{text}"
        );
        let fewer = report(&[("hashed", 99, 9_900), ("heap", 100, 10_000)]);
        assert!(judge(&base, &fewer, 0.01)
            .unwrap()
            .iter()
            .any(|j| j.verdict == "COUNTS DIFFER"));
        let missing = report(&[("hashed", 100, 10_000)]);
        assert!(judge(&base, &missing, 0.01).is_err());
    }
}
