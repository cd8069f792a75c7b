//! `alloclab compare`: one workload under several allocators and variants, one worker
//! process per run, printed as one screen (or Markdown, CSV, JSON).

use crate::cli::CompareArgs;
use crate::driver::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::{self, table, Format};
use crate::model::summary::SummaryRow;
use crate::ui::interrupt::{interrupted, stop_on_interrupt};
use crate::ui::progress::Progress;
use std::time::Duration;

pub fn run(args: CompareArgs) -> Result<()> {
    let specs = args.specs()?;
    let workers = preflight::check(&specs).map_err(Error::bad)?;
    let mut executor = ProcessExecutor::new(
        workers,
        args.counters,
        Duration::from_secs_f64(args.timeout),
    )
    .map_err(|why| Error::counters(args.counters, why))?;
    stop_on_interrupt();
    let mut progress = Progress::new(specs.len());
    let outcomes = driver::run_all(&specs, &args.budget.budget(), &mut executor, &mut progress);
    progress.clear();
    let incomplete = interrupted().then(|| {
        format!(
            "incomplete: Ctrl-C after {} of {} runs; the rows below are the finished ones",
            outcomes.len(),
            specs.len()
        )
    });
    let conflicts = driver::checksum_conflicts(&outcomes);
    if !conflicts.is_empty() {
        return Err(Error::RunFailed(conflicts.join("\nerror: ")));
    }
    let rows: Vec<SummaryRow> = outcomes.iter().map(SummaryRow::from_outcome).collect();
    if let Some(note) = &incomplete {
        if args.format == Format::Table {
            println!("{note}");
        }
    }
    if !rows.is_empty() {
        super::print_out(&match args.format {
            Format::Table => table::compare_screen(&outcomes, &rows, args.verbose),
            format => export::render(format, &rows),
        })?;
    }
    if let Some(note) = incomplete {
        return Err(Error::Interrupted(note));
    }
    let failed = rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, rows.len(), "runs")
}
