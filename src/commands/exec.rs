//! `alloclab exec`: any command under each allocator (preloaded), in shuffled rounds, with
//! per-run rusage and syscall counts; a table (or Markdown, CSV, JSON) and, with `--out`,
//! a results folder updated after every run.

use crate::cli::ExecArgs;
use crate::engine::command::{self as exec, ExecRecord};
use crate::engine::spawn::ChildRun;
use crate::error::{Error, Result};
use crate::export::exec as output;
use crate::export::folder::{Claim, Folder, Kind};
use crate::export::{self, ci, Format, RowFormat};
use crate::fmt::fmt_ns;
use crate::ui::progress::Progress;
use std::path::Path;

/// A session's progress on the lab's one progress display.
pub struct ExecProgress(pub Progress, Mode);

#[derive(PartialEq)]
enum Mode {
    /// One session: it says how many runs it makes.
    Session,
    /// Many sessions, counted beforehand.
    Planned,
    /// Runs not shown (bisection probes, shown by their caller); messages still are.
    Quiet,
}

impl ExecProgress {
    /// For many sessions whose runs were counted into `progress`'s total.
    pub fn planned(progress: Progress) -> Self {
        ExecProgress(progress, Mode::Planned)
    }

    /// For one session.
    pub fn session() -> Self {
        ExecProgress(Progress::with_results(0), Mode::Session)
    }

    /// Shows messages only.
    pub fn quiet() -> Self {
        ExecProgress(Progress::with_results(0), Mode::Quiet)
    }
}

impl exec::Observer for ExecProgress {
    fn session_started(&mut self, total_runs: usize) {
        if self.1 == Mode::Session {
            self.0.set_total(total_runs);
        }
    }

    fn run_started(&mut self, label: &str, what: &str) {
        if self.1 != Mode::Quiet {
            self.0.start(&format!("{label} {what}"));
        }
    }

    fn run_finished(&mut self, _label: &str, run: std::result::Result<&ChildRun, &str>) {
        if self.1 == Mode::Quiet {
            return;
        }
        match run {
            Ok(r) if r.termination.success() => {
                self.0.finish_with(&fmt_ns(r.wall_ns as f64), false)
            }
            Ok(r) => self.0.finish_with(&r.termination.describe(None), true),
            Err(e) => self.0.finish_with(&format!("failed: {e}"), true),
        }
    }

    fn say(&mut self, msg: &str) {
        self.0.say(msg);
    }
}

/// Opens `dir` for the results of `kind` and starts a fresh measurement in it (see
/// [`Folder`]): created if missing, locked, refused when it holds another command's
/// results; an earlier measurement's files are removed.
pub fn take_out_dir(dir: &Path, kind: Kind, force: bool) -> Result<Folder> {
    let claim = if force { Claim::Force } else { Claim::Own };
    let mut folder = Folder::open(dir, kind, claim).map_err(Error::bad)?;
    folder.start(true).map_err(Error::failed)?;
    Ok(folder)
}

pub fn run(args: &ExecArgs, level: f64) -> Result<()> {
    let settings = args.settings(level).map_err(Error::BadInput)?;
    if args.format == Format::Bmf {
        check_bencher_names(&settings)?;
    }
    let mut folder = args
        .out
        .as_deref()
        .map(|d| take_out_dir(d, Kind::Exec, args.force_out))
        .transpose()?;
    crate::engine::begin();
    let mut progress = ExecProgress(Progress::with_results(0), Mode::Session);
    let mut save = |record: &ExecRecord| match &folder {
        Some(f) => output::save(f, record),
        None => Ok(()),
    };
    let record = exec::run_session(&settings, &mut progress, &mut save);
    progress.0.clear();
    let record = record?;
    if let Some(f) = &mut folder {
        f.finish(record.complete).map_err(Error::failed)?;
    }
    let rows = output::rows(&record);
    super::print_out(&render(args, &record, &rows)?)?;
    if let Some(dir) = &args.out {
        crate::fmt::say!("results in {}", dir.display());
    }
    conclude(&record, &rows)
}

/// The session in the format asked for: the answer-first screen (or the full one with
/// --verbose), Markdown, CSV, JSON or a CI format.
fn render(args: &ExecArgs, record: &ExecRecord, rows: &[output::ExecRow]) -> Result<String> {
    Ok(match args.format {
        Format::Table if !args.verbose => {
            let mut s = output::answer_screen(record, rows, crate::fmt::screen_width());
            if !record.complete {
                s = format!(
                    "{}{s}",
                    crate::fmt::wrap(
                        &format!(
                            "incomplete: interrupted by {} before every round ran; the rows are from the finished runs (column runs) of the {} planned per allocator",
                            crate::ui::interrupt::signal_name().unwrap_or("an interrupt"),
                            record.runs_requested
                        ),
                        crate::fmt::screen_width(),
                        "",
                        "  "
                    )
                );
            }
            s
        }
        Format::Table => {
            let mut s = output::header(record);
            s.push('\n');
            s.push_str(&output::to_table(rows));
            // Every item of the answer, then the notes, each line whole.
            let mut lines: Vec<String> = crate::analysis::command::answer(rows)
                .into_iter()
                .map(|i| i.text)
                .collect();
            lines.extend(output::notes(rows));
            lines.extend(output::order_line(record));
            if !lines.is_empty() {
                s.push('\n');
                for l in lines {
                    s.push_str(&l);
                    s.push('\n');
                }
            }
            s
        }
        // Markdown has no column for it: an interrupted session says so first (JSON and
        // CSV rows carry `complete`, `stopped_by` and `runs_planned`).
        Format::Markdown if !record.complete => format!(
            "> **Incomplete:** interrupted by {} before every round ran; the rows are from the finished runs (column runs) of the {} planned per allocator.\n\n{}",
            crate::ui::interrupt::signal_name().unwrap_or("an interrupt"),
            record.runs_requested,
            export::render(RowFormat::Markdown, rows)
        ),
        Format::Markdown => export::render(RowFormat::Markdown, rows),
        Format::Csv => export::render(RowFormat::Csv, rows),
        Format::Json => export::render(RowFormat::Json, rows),
        format @ (Format::Bmf | Format::GithubActionBenchmark) => {
            ci_text(format, rows, record)?
        }
    })
}

/// How the session ends: interrupted, failed runs, or (several commands) a significant
/// slow-down of one against the first, which fails it for CI.
fn conclude(record: &ExecRecord, rows: &[output::ExecRow]) -> Result<()> {
    if !record.complete {
        return Err(Error::Interrupted("the finished runs are kept".into()));
    }
    let failed = rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, rows.len(), "allocators")?;
    // Several commands: a significant slow-down of one against the first is a failure
    // (exit 1), for CI.
    let slower = crate::analysis::command::regressions(record, rows);
    if !slower.is_empty() {
        let said: Vec<String> = slower
            .iter()
            .map(|(r, b)| format!("{r} against {b}"))
            .collect();
        return Err(Error::RunFailed(format!(
            "slower beyond ±{:.0} %: {}",
            100.0 * record.noise_threshold,
            said.join(", ")
        )));
    }
    Ok(())
}

/// Refuses, before anything runs, a command whose benchmark names would be longer than
/// Bencher takes (the testbed id has a fixed length, so the names are known now).
fn check_bencher_names(settings: &exec::ExecSettings) -> Result<()> {
    let mut commands = vec![settings.command.clone()];
    commands.extend(settings.versions.iter().map(|v| v.command.clone()));
    for c in commands {
        check_bencher_names_of(settings, &c)?;
    }
    Ok(())
}

fn check_bencher_names_of(settings: &exec::ExecSettings, c: &[std::ffi::OsString]) -> Result<()> {
    let words: Vec<String> = c.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let command = crate::fmt::shell_words(&words);
    for a in &settings.allocators {
        let name = ci::exec_name("00000000", &command, &a.to_string());
        let n = name.chars().count();
        if n > ci::BENCHER_NAME_MAX {
            return Err(Error::BadInput(format!(
                "--format bmf: the benchmark name of this command under {a} would have {n} characters, more than the {} Bencher takes; run a shorter command (a script that runs this one)",
                ci::BENCHER_NAME_MAX
            )));
        }
    }
    Ok(())
}

/// exec's rows in a CI service's format, with the testbed, the allocators' versions and
/// what the bounds are on stderr. The testbed is the machine the session recorded.
fn ci_text(format: Format, rows: &[output::ExecRow], record: &ExecRecord) -> Result<String> {
    let testbed = ci::Testbed::of(&record.environment);
    let session = ci::Session {
        command: "exec",
        complete: record.complete,
        stopped_by: rows.iter().find_map(|r| r.stopped_by.clone()),
        replicates: "runs",
        planned: record.runs_requested,
        level: record.confidence,
    };
    let benches = ci::exec_benchmarks(rows, &session, &testbed);
    super::ci_output(format, &benches, &session, &testbed)
}
