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
            &hgrm::render(&o.lateness.hist),
        )?;
        let mut all = new_histogram(COST_MAX);
        for h in &o.cost[..4] {
            // Same bounds, so adding cannot fail.
            let _ = all.add(&h.hist);
        }
        write(
            &dir.join(format!("{}-cost.hgrm", o.label())),
            &hgrm::render(&all),
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
