//! `alloclab report DIR`: rebuild a results folder's summary, histograms, plots and
//! REPORT.md from its runs on disk alone.

use crate::cli::ReportArgs;
use crate::error::{Error, Result};
use crate::export::folder::Claim;
use crate::export::{report_md, results};

pub fn run(args: &ReportArgs) -> Result<()> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(Error::BadInput(format!(
            "{} is not a folder; give a results folder written by `alloclab run`, e.g. results/numpy-temporaries",
            dir.display()
        )));
    }
    // The lock first: a folder another alloclab is still writing (calibrating, say) is
    // in use, not "no results folder".
    let mut folder = results::ResultsDir::open(dir, Claim::Existing).map_err(Error::bad)?;
    if !dir.join("plan.json").is_file() {
        return Err(Error::BadInput(format!(
            "{} is not a results folder (no plan.json); give one written by `alloclab run`, e.g. results/numpy-temporaries",
            dir.display()
        )));
    }
    let loaded = results::load(dir).map_err(Error::bad)?;
    let rebuilt = report_md::rebuild(folder.folder(), &loaded, true).map_err(Error::failed)?;
    folder.finish(rebuilt.complete()).map_err(Error::failed)?;
    drop(folder);
    eprintln!(
        "{}: {}; {} plot(s); REPORT.md rebuilt",
        dir.display(),
        rebuilt.counts(),
        rebuilt.plots
    );
    Ok(())
}
