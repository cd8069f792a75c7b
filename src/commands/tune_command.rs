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
pub fn run(args: &TuneArgs, level: f64) -> Result<()> {
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
            level,
        ),
    )
    .map_err(Error::BadInput)?;
    let settings = crate::engine::command::ExecSettings {
        max_time: Some(std::time::Duration::from_secs_f64(args.max_time)),
        ..settings
    };
    crate::engine::begin();
    let mut progress = super::exec::ExecProgress::session();
    let record = crate::engine::command::run_session(&settings, &mut progress, &mut |_| Ok(()));
    progress.0.clear();
    let record = record?;
    let rows = crate::export::exec::rows(&record);
    let verdicts = tune::set_verdicts(&record);
    let advice = tune::recommendation(&verdicts, args.noise_threshold, record.confidence);
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
        Format::Table => screen(args, &record, &rows, &verdicts, &advice),
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
/// tune's first screen for a command, in the reader's width: the command, the
/// recommendation and each set's verdict against its allocator's defaults; then the table
/// (the one that fits, or every column with --verbose), its sets named under their
/// allocator; then how it ran.
fn screen(
    args: &TuneArgs,
    record: &crate::model::command::ExecRecord,
    rows: &[ExecRow],
    verdicts: &[SetVerdict],
    advice: &str,
) -> String {
    let width = crate::fmt::screen_width();
    let wrap = |text: &str, rest: &str| crate::fmt::wrap(text, width, "", rest);
    let header = crate::export::exec::header(record);
    let mut lines = header.lines();
    let mut t = String::new();
    if let Some(command) = lines.next() {
        t += &wrap(command, "  ");
    }
    t += &wrap(advice, "  ");
    for v in verdicts {
        t += &wrap(&v.line, "    ");
    }
    t.push('\n');
    let named: Vec<_> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.allocator = set_name(&r.allocator);
            r
        })
        .collect();
    t.push_str(&if args.verbose {
        crate::export::exec::to_table(&named)
    } else {
        crate::export::exec::to_sets_table(&named)
    });
    t.push('\n');
    for l in lines {
        t += &wrap(l, "  ");
    }
    t
}

/// A set as the table names it: an allocator's defaults as "<name> (defaults)", a knob
/// set by its knobs, indented under its allocator.
pub(crate) fn set_name(spec: &str) -> String {
    match spec.split_once(':') {
        Some((_, knobs)) => format!("  {knobs}"),
        None => format!("{spec} (defaults)"),
    }
}

pub(crate) fn not_for_tune(format: Format) -> Error {
    Error::BadInput(format!(
        "--format {}: tune prints table, markdown, csv or json; its rows are knob sets against their allocator's defaults, a search rather than figures to keep a history of. Put the knobs it finds into `alloclab compare --allocators` or `alloclab exec --allocators`, which give {}",
        format.name(),
        format.name()
    ))
}
