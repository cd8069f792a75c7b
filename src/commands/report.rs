//! `alloclab report DIR`: rebuild a results folder's summary, histograms, plots and
//! REPORT.md from its runs on disk alone; given a folder of results folders (what
//! `make run-all` writes), write its index.html: the run's answer on one page.

use crate::cli::ReportArgs;
use crate::error::{Error, Result};
use crate::export::folder::Claim;
use crate::export::{report_md, results};

/// Rebuilds `args.dir` (a run folder, or a folder of them); `given` the --confidence the
/// command line gave, else each folder is rebuilt at the level it was measured at.
pub fn run(args: &ReportArgs, given: Option<f64>) -> Result<()> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(Error::BadInput(format!(
            "{} is not a folder; give a results folder written by `alloclab run`, e.g. results/numpy-temporaries",
            dir.display()
        )));
    }
    // A folder of results folders (results/ after run-all): its index page.
    if crate::export::folder::kind_of(dir)
        .map_err(Error::bad)?
        .is_none()
    {
        if !holds_results(dir) {
            return Err(Error::BadInput(format!(
                "{} is not a results folder and holds none; give one written by `alloclab run`, e.g. results/numpy-temporaries, or the folder that holds them (results/ after `make run-all`) for its index.html",
                dir.display()
            )));
        }
        // An unfinished run folder (a killed run-all), or one without findings.json, gets
        // its REPORT.md, page and findings.json rebuilt first, from what it holds, so that
        // the index reads findings of what is there and links a page that says what is
        // missing; one another alloclab is writing is left to it.
        for e in crate::export::index::entries(dir) {
            if !e.needs_rebuild() {
                continue;
            }
            let sub = dir.join(&e.name);
            if crate::export::folder::writer_of(&sub).is_some() {
                continue;
            }
            if let Err(why) = rebuild(&sub, given) {
                crate::fmt::say!(
                    "warning: {}: its report could not be rebuilt: {}",
                    sub.display(),
                    why.message()
                );
            }
        }
        let entries = crate::export::index::entries(dir);
        for e in &entries {
            if let Some(p) = &e.problem {
                crate::fmt::say!(
                    "warning: {}/{}: could not read its results: {p}; the index says so",
                    dir.display(),
                    e.name
                );
            }
        }
        let html = crate::export::index::page(dir, &entries);
        let path = crate::export::folder::write_index(dir, &html).map_err(Error::BadInput)?;
        crate::fmt::say!(
            "{}: the run's answer, with a link to every folder's page ({})",
            path.display(),
            crate::fmt::counted(entries.len(), "folder", "folders")
        );
        return Ok(());
    }
    let rebuilt = rebuild(dir, given)?;
    crate::fmt::say!(
        "{}: {}; {}; REPORT.md rebuilt",
        dir.display(),
        rebuilt.counts(),
        crate::fmt::counted(rebuilt.plots, "plot", "plots")
    );
    // The folder's answer on stdout, as `alloclab run` printed it.
    super::print_out(&rebuilt.answer.console(crate::fmt::screen_width()))
}

/// Rebuilds one run folder's summary, histograms, plots, REPORT.md and page from its runs,
/// at the confidence level `given`, else the one its plan was measured at (95 % for a
/// plan from before plans kept it).
fn rebuild(dir: &std::path::Path, given: Option<f64>) -> Result<report_md::Rebuilt> {
    // The lock first: a folder another alloclab is still writing (calibrating, say) is
    // in use, not "no results folder".
    let mut folder = results::ResultsDir::open(dir, Claim::Existing).map_err(Error::bad)?;
    folder.folder().remove_stale_temporaries();
    // Anything at plan.json (a FIFO, say) is read, and refused for what it is.
    if !dir.join("plan.json").exists()
        && crate::export::folder::kind_of(dir).ok().flatten()
            == Some(crate::export::folder::Kind::Run)
    {
        return Err(Error::BadInput(format!(
            "{}: its run was stopped before it wrote its plan (plan.json): nothing of it was measured, so there is no report to write; run the experiment again",
            dir.display()
        )));
    }
    if !dir.join("plan.json").exists() {
        return Err(Error::BadInput(format!(
            "{} is not a results folder (no plan.json) and holds none; give one written by `alloclab run`, e.g. results/numpy-temporaries, or the folder that holds them (results/) for its index.html",
            dir.display()
        )));
    }
    let mut loaded = results::load(dir).map_err(Error::bad)?;
    if let Some(level) = given {
        loaded = loaded.at_level(level);
    }
    let rebuilt = report_md::rebuild(folder.folder(), &loaded, true).map_err(Error::failed)?;
    // What the folder's runs hold is all report has: it runs nothing, so a folder whose
    // plan did not finish stays so (folder.json names what is missing).
    folder
        .finish_missing(rebuilt.missing.clone())
        .map_err(Error::failed)?;
    Ok(rebuilt)
}

/// Whether `dir` holds at least one results folder of the lab (with its folder.json,
/// readable or not; a link to one counts).
fn holds_results(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            // A folder.json that cannot be read (cut short, too large) is a damaged
            // results folder, said on the index page, not passed over.
            e.path().is_dir() && !matches!(crate::export::folder::status(&e.path()), Ok(None))
        })
    })
}
