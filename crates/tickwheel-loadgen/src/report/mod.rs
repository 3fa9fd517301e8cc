//! The reports of a run, all written into `--out`:
//!
//! | file | module | what |
//! |---|---|---|
//! | (terminal) | [`table`] | side-by-side table and verdict |
//! | `report.json` | [`json`] | versioned summary for CI and `diff` |
//! | `<timer>-lateness.hgrm`, `<timer>-cost.hgrm` | [`hgrm`] | percentile distributions |
//! | `<timer>.hlog` | [`hlog`] | interval log, one interval per second |
//! | `lateness.svg`, `cost.svg` | [`svg`] | plots comparing the implementations |

pub(crate) mod hgrm;
pub(crate) mod hlog;
pub(crate) mod json;
pub(crate) mod svg;
pub(crate) mod table;

use std::fs;
use std::path::Path;
use std::time::SystemTime;

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
pub(crate) fn write_all(
    dir: &Path,
    report: &Report,
    outcomes: &[Outcome],
    started: SystemTime,
) -> Result<(), Error> {
    fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    report.write(&dir.join("report.json"))?;
    for o in outcomes {
        write(
            &dir.join(format!("{}-lateness.hgrm", o.label())),
            &hgrm::render(&o.lateness.hist, o.lateness_unit()),
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
            "tickwheel-loadgen {} {} clock; tag lateness in {}, tag cost in ns",
            o.timer,
            o.clock.name(),
            o.lateness_unit()
        );
        hlog::write(
            &dir.join(format!("{}.hlog", o.label())),
            &comment,
            started,
            &[
                ("lateness", &o.lateness_intervals),
                ("cost", &o.cost_intervals),
            ],
        )?;
    }
    let unit = outcomes.first().map_or("ns", Outcome::lateness_unit);
    let labels: Vec<String> = outcomes.iter().map(Outcome::label).collect();
    let series: Vec<(&str, &hdrhistogram::Histogram<u64>)> = labels
        .iter()
        .zip(outcomes)
        .map(|(label, o)| (label.as_str(), &o.lateness.hist))
        .collect();
    write(
        &dir.join("lateness.svg"),
        &svg::lateness(report, &series, unit),
    )?;
    write(&dir.join("cost.svg"), &svg::cost(report))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use indicatif::ProgressBar;
    use tickwheel::{Kind, Options};

    use super::*;
    use crate::config::{Clock, Config, Workload};
    use crate::gate::Thresholds;

    /// A small virtual compare, its reports written, read back and checked against the run.
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
        };
        let outcomes: Vec<Outcome> = Kind::ALL
            .iter()
            .map(|k| {
                let timer = k.build::<u64>(Options::new()).unwrap();
                crate::virtual_clock::run(timer, &workload, 25, &ProgressBar::hidden()).unwrap()
            })
            .collect();
        let report = Report::new(&config, &outcomes, 25);
        write_all(dir.path(), &report, &outcomes, SystemTime::now()).unwrap();

        assert_eq!(
            Report::read(&dir.path().join("report.json")).unwrap(),
            report
        );
        for o in &outcomes {
            // The interval log adds up to the run's histograms, one interval per second.
            let bytes = fs::read(dir.path().join(format!("{}.hlog", o.timer))).unwrap();
            let totals = hlog::read_totals(&bytes).unwrap();
            let mut cost = new_histogram(COST_MAX);
            for h in &o.cost[..4] {
                cost.add(&h.hist).unwrap();
            }
            for (tag, hist, intervals) in totals {
                let want = if tag == "lateness" {
                    &o.lateness.hist
                } else {
                    &cost
                };
                assert_eq!(intervals, 3, "{tag}");
                assert_eq!(hist.len(), want.len(), "{} {tag}", o.timer);
                assert_eq!(hist.max(), want.max(), "{} {tag}", o.timer);
            }
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
    }
}
