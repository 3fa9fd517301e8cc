//! The reports of a run, all written into `--out`:
//!
//! | file | module | what |
//! |---|---|---|
//! | (all) | [`assemble`] | the report's figures from the runs: medians over the repetitions |
//! | (terminal) | [`table`], [`pick`] | side-by-side table, which to pick, and the verdict |
//! | `report.json` | [`json`] | versioned summary for CI and `diff` |
//! | `<timer>-lateness.hgrm`, `<timer>-cost.hgrm` | [`hgrm`] | percentile distributions |
//! | `<timer>.hlog` | [`hlog`] | interval log, one interval per second |
//! | `lateness.svg`, `cost.svg` | [`svg`] | plots comparing the implementations |

pub(crate) mod assemble;
pub(crate) mod hgrm;
pub(crate) mod hlog;
pub(crate) mod json;
pub(crate) mod pick;
pub(crate) mod svg;
pub(crate) mod table;

use std::fs;
use std::path::Path;

use crate::error::Error;
use crate::measure::{new_histogram, COST_MAX};
use crate::outcome::Outcome;
use json::Report;

fn write(path: &Path, text: &str) -> Result<(), Error> {
    fs::write(path, text).map_err(|e| Error::io("writing", path, e))
}

/// Writes every file report for `outcomes` into `dir`.
///
/// # Errors
/// [`Error::Io`] for the first file that cannot be written.
pub(crate) fn write_all(dir: &Path, report: &Report, outcomes: &[&Outcome]) -> Result<(), Error> {
    fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    report.write(&dir.join("report.json"))?;
    for o in outcomes {
        write(
            &dir.join(format!("{}-lateness.hgrm", o.label())),
            &hgrm::render(&o.shown_lateness().0.hist, "ns"),
        )?;
        let mut all = new_histogram(COST_MAX);
        for h in &o.cost[..4] {
            // Same bounds, so adding cannot fail.
            let _ = all.add(&h.hist);
        }
        write(
            &dir.join(format!("{}-cost.hgrm", o.label())),
            &hgrm::render(&all, "ns"),
        )?;
        let comment = format!(
            "tickwheel-loadgen {} {} clock; tags lateness and cost, values in ns",
            o.label(),
            o.clock.name(),
        );
        hlog::write(
            &dir.join(format!("{}.hlog", o.label())),
            &comment,
            o.started,
            &[
                ("lateness", o.shown_lateness().1),
                ("cost", &o.cost_intervals),
            ],
        )?;
    }
    let labels: Vec<String> = outcomes.iter().map(|o| o.label()).collect();
    let series: Vec<(&str, &hdrhistogram::Histogram<u64>)> = labels
        .iter()
        .zip(outcomes)
        .map(|(label, o)| (label.as_str(), &o.shown_lateness().0.hist))
        .collect();
    write(&dir.join("lateness.svg"), &svg::lateness(report, &series))?;
    write(&dir.join("cost.svg"), &svg::cost(report))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use indicatif::ProgressBar;
    use tickwheel::{Kind, Options};

    use super::*;
    use crate::config::{Clock, Config, LatenessView, Workload};
    use crate::counter::CallClock;
    use crate::thresholds::Thresholds;

    /// A small virtual compare with two repetitions, its reports written, read back and checked
    /// against the run.
    #[test]
    fn reports_round_trip() {
        let workload = Workload {
            connections: 1_000,
            rate: 20_000.0,
            duration: Duration::from_millis(2_500),
            idle_timeout: Duration::from_millis(400),
            request_timeout: Duration::from_millis(30),
            slow_fraction: 0.05,
            tick: Duration::from_millis(1),
            seed: 9,
            handler_cost: Duration::ZERO,
            herd: false,
        };
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            command: "compare",
            kinds: Kind::ALL.to_vec(),
            clock: Clock::Virtual,
            workload: workload.clone(),
            out: dir.path().to_path_buf(),
            thresholds: Thresholds::default(),
            progress: false,
            service: None,
            repeat: 2,
            lateness: LatenessView::Loop,
            lateness_costs: crate::config::LatenessCosts::Min,
            record: None,
            profile: None,
            slowdown: 1.0,
            cost: crate::args::CostKind::Wall,
        };
        let clock = CallClock::new();
        let runs: Vec<(Vec<Outcome>, usize)> = Kind::ALL
            .iter()
            .map(|k| {
                let reps = (0..2)
                    .map(|_| {
                        let timer = k.build::<u64>(Options::new()).unwrap();
                        crate::virtual_clock::run(
                            timer,
                            &workload,
                            LatenessView::Loop,
                            &clock,
                            &ProgressBar::hidden(),
                        )
                        .unwrap()
                    })
                    .collect();
                (reps, 1)
            })
            .collect();
        let report = Report::new(&config, &runs, &clock);
        let shown: Vec<&Outcome> = runs.iter().map(|(reps, i)| &reps[*i]).collect();
        write_all(dir.path(), &report, &shown).unwrap();

        let read = Report::read(&dir.path().join("report.json")).unwrap();
        assert_eq!(read, report);
        let mut start_times = Vec::new();
        for (o, r) in shown.iter().zip(&read.results) {
            assert_eq!(r.repetitions.len(), 2);
            // The interval log adds up to the run's histograms and to report.json's counts, one
            // interval per second and a last one to the end.
            let bytes = fs::read(dir.path().join(format!("{}.hlog", o.timer))).unwrap();
            let totals = hlog::read_totals(&bytes).unwrap();
            let mut cost = new_histogram(COST_MAX);
            for h in &o.cost[..4] {
                cost.add(&h.hist).unwrap();
            }
            for (tag, hist, intervals) in totals {
                let want = if tag == "lateness" {
                    assert_eq!(hist.len(), r.lateness.count, "{} {tag}", o.timer);
                    assert_eq!(hist.len(), r.fired, "{} {tag}", o.timer);
                    &o.lateness.hist
                } else {
                    &cost
                };
                assert_eq!(intervals, 3, "{tag}");
                assert_eq!(hist.len(), want.len(), "{} {tag}", o.timer);
                assert_eq!(hist.max(), want.max(), "{} {tag}", o.timer);
            }
            let text = String::from_utf8(bytes).unwrap();
            let start = text
                .lines()
                .find_map(|l| l.strip_prefix("#[StartTime: "))
                .and_then(|l| l.split_whitespace().next())
                .expect("a StartTime line")
                .to_string();
            start_times.push(start);
            // The hgrm's last data row counts every value.
            for (file, count) in [
                (format!("{}-lateness.hgrm", o.timer), o.lateness.count()),
                (format!("{}-cost.hgrm", o.timer), cost.len()),
            ] {
                let text = fs::read_to_string(dir.path().join(file)).unwrap();
                let rows = hgrm::plotter_rows(&text);
                assert_eq!(rows.last().unwrap()[2].parse::<u64>().unwrap(), count);
            }
        }
        let mut distinct = start_times.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            start_times.len(),
            "each implementation's log carries its own start: {start_times:?}"
        );
    }
}
