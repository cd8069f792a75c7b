//! `alloclab tune -- CMD`: the curated knob sets applied to your command through exec's
//! preloads and environment, in interleaved rounds, with a verdict per set.

use crate::analysis::command::ExecRow;
use crate::analysis::tune::{self, SetVerdict};
use crate::cli::TuneArgs;
use crate::engine::program::{Template, CALLS, SIZE};
use crate::error::{Error, Result};
use crate::export::{self, Format};
use crate::model::knobs::AllocatorSpec;
use crate::model::spec::{Allocator, Choice};
use serde::Serialize;

/// `tune -- CMD --format json`.
#[derive(Serialize)]
struct TuneOutput<'a> {
    command: &'a [String],
    rows: &'a [ExecRow],
    sets: &'a [SetVerdict],
    recommendation: &'a str,
}

/// The allocator specs `tune -- CMD` tries: every curated set of each allocator given
/// (defaults first), installed libraries with their defaults.
fn command_sets(args: &TuneArgs) -> Result<Vec<AllocatorSpec>> {
    let given = match &args.allocators {
        Some(list) => crate::model::knobs::parse_spec_list(list).map_err(Error::bad)?,
        None => Allocator::ALL
            .iter()
            .map(|&a| AllocatorSpec::plain(a))
            .collect(),
    };
    let mut out = Vec::new();
    for s in given {
        if !s.knobs.is_empty() {
            return Err(Error::BadInput(format!(
                "--allocators {s}: tune tries its own knob sets; give allocator names (or installed libraries) without knobs"
            )));
        }
        if s.library.is_some() {
            out.push(s);
        } else {
            out.extend(tune::specs(s.allocator));
        }
    }
    Ok(out)
}

/// `tune -- CMD`: the curated sets applied to your command through exec's preloads and
/// environment (each knob read back by the probe), in interleaved rounds.
pub fn run(args: &TuneArgs) -> Result<()> {
    let p = &args.program;
    let template = Template::new(p.command.clone());
    template.check(false, p.calls).map_err(Error::BadInput)?;
    let words = template.render(
        template.has(SIZE).then_some(args.size),
        template.has(CALLS).then_some(p.calls).flatten(),
    );
    let settings = super::options::command_settings(
        command_sets(args)?,
        &words,
        super::options::CommandOptions::of_program(
            p,
            args.processes,
            Default::default(),
            args.counters,
            args.noise_threshold,
        ),
    )
    .map_err(Error::BadInput)?;
    crate::engine::begin();
    let mut progress = super::exec::ExecProgress::session();
    let record = crate::engine::command::run_session(&settings, &mut progress, &mut |_| Ok(()));
    progress.0.clear();
    let record = record?;
    let rows = crate::export::exec::rows(&record);
    let verdicts = tune::set_verdicts(&record);
    let advice = tune::recommendation(&verdicts, args.noise_threshold);
    let text = match args.format {
        Format::Json => {
            let v = TuneOutput {
                command: &record.command,
                rows: &rows,
                sets: &verdicts,
                recommendation: &advice,
            };
            serde_json::to_string_pretty(&v).map_err(Error::failed)? + "\n"
        }
        Format::Table => {
            let mut t = crate::export::exec::header(&record);
            t.push('\n');
            t.push_str(&crate::export::exec::to_table(&rows));
            t.push('\n');
            for v in &verdicts {
                t.push_str(&v.line);
                t.push('\n');
            }
            t.push('\n');
            t.push_str(&advice);
            t.push('\n');
            t
        }
        format => export::render(format.rows().ok_or_else(|| not_for_tune(format))?, &rows),
    };
    super::print_out(&text)?;
    if !record.complete {
        return Err(Error::Interrupted("nothing is saved by tune".into()));
    }
    let failed = rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, rows.len(), "knob sets")
}

/// `--format bmf` or `github-action-benchmark` given to tune.
pub(crate) fn not_for_tune(format: Format) -> Error {
    Error::BadInput(format!(
        "--format {}: tune prints table, markdown, csv or json; its rows are knob sets against their allocator's defaults, a search rather than figures to keep a history of. Put the knobs it finds into `alloclab compare --allocators` or `alloclab exec --allocators`, which give {}",
        format.name(),
        format.name()
    ))
}
