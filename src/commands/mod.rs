//! One file per subcommand, each a short story: options → preflight → executor →
//! analysis → export. Each returns the lab's [`Error`]; `main` maps it to an exit code.

pub mod calibrate;
pub mod cliff;
pub mod cliff_command;
pub mod compare;
pub mod diff;
pub mod exec;
pub mod list;
pub mod options;
pub mod report;
pub mod run;
pub mod serve;
pub mod sweep;
pub mod trace;
pub mod tune;
pub mod tune_command;

use crate::cli::Command;
use crate::error::{Error, Result};
use std::io::Write;

/// Runs one parsed command; `confidence` the level the command line gave, if it gave one
/// (every interval and verdict is made at it, or at the default 95 %; `report` rebuilds
/// a folder at the level it was measured at unless it is given).
pub fn dispatch(command: Command, confidence: Option<f64>) -> Result<()> {
    let level = confidence.unwrap_or(crate::analysis::stats::DEFAULT_LEVEL);
    // The trap loop writes nothing: it runs with its output discarded.
    if !matches!(command, Command::Generate(_) | Command::TrapLoop { .. }) {
        stdout_is_open()?;
        crate::engine::spawn::memory_every_setting().map_err(Error::BadInput)?;
    }
    match command {
        Command::List => list::run(),
        Command::Compare(args) => compare::run(args, level),
        Command::Run(args) => run::run(args, level),
        Command::Report(args) => report::run(&args, confidence),
        Command::Calibrate(args) => calibrate::run(&args, level),
        Command::Cliff(args) => cliff::run(&args, level),
        Command::Tune(args) => tune::run(&args, level),
        Command::Exec(args) => exec::run(&args, level),
        Command::Serve(args) => serve::run(&args, level),
        Command::Sweep(args) => sweep::run(&args, level),
        Command::Trace(args) => trace::run(&args, level),
        Command::Diff(args) => diff::run(&args, level),
        Command::Generate(args) => generate(&args),
        Command::TrapLoop { calls } => {
            crate::engine::command::trap_loop(calls);
            Ok(())
        }
        Command::ProbePreload { kind, knob } => {
            let report = crate::engine::probe::probe_here(&kind, &knob);
            let text = serde_json::to_string(&report).map_err(Error::failed)?;
            print_out(&(text + "\n"))
        }
    }
}

/// `alloclab generate`: man pages or shell completions from the clap definitions, written
/// through the one results-folder writer (a folder of kind `generate`: its manifest
/// lists the pages, and a folder the lab did not make is refused like any --out).
fn generate(args: &crate::cli::GenerateArgs) -> Result<()> {
    use crate::export::folder::{Claim, Folder, Kind};
    use clap::CommandFactory;
    let claim = if args.force_out {
        Claim::Force
    } else {
        Claim::Own
    };
    let mut folder = Folder::open(&args.out, Kind::Generate, claim).map_err(Error::bad)?;
    folder.start(true).map_err(Error::failed)?;
    let fail = |e: std::io::Error| Error::RunFailed(format!("generating failed: {e}"));
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    match args.what {
        crate::cli::Generated::Man => {
            // Every command's page, as clap_mangen::generate_to names them (without `help`).
            fn pages(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
                for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
                    pages(sub, out)?;
                }
                let man = clap_mangen::Man::new(cmd);
                let mut page = Vec::new();
                man.render(&mut page)?;
                out.push((man.get_filename(), page));
                Ok(())
            }
            let mut cmd = crate::cli::Cli::command().disable_help_subcommand(true);
            cmd.build();
            pages(cmd, &mut files).map_err(fail)?;
        }
        crate::cli::Generated::Completions => {
            use clap_complete::{Generator, Shell};
            for shell in [
                Shell::Bash,
                Shell::Zsh,
                Shell::Fish,
                Shell::Elvish,
                Shell::PowerShell,
            ] {
                let mut cmd = crate::cli::Cli::command();
                let mut text = Vec::new();
                clap_complete::generate(shell, &mut cmd, "alloclab", &mut text);
                files.push((shell.file_name("alloclab"), text));
            }
        }
    }
    for (name, bytes) in &files {
        folder.bytes(name, bytes).map_err(Error::failed)?;
    }
    folder.finish(true).map_err(Error::failed)?;
    let mut written: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    written.sort();
    crate::fmt::say!(
        "wrote {} file(s) into {}: {}",
        written.len(),
        args.out.display(),
        written.join(", ")
    );
    Ok(())
}

/// Refuses, before anything runs, a closed stdout (`>&-`): what a command prints there
/// would be lost. Rust's runtime puts /dev/null, opened read-write, on a standard
/// descriptor that was closed at start (before `main`), so a closed stdout is seen as
/// that; a shell's `> /dev/null` opens it write-only, and is kept.
pub fn stdout_is_open() -> Result<()> {
    // SAFETY: F_GETFL only reads the status flags of descriptor 1; no memory is passed.
    let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
    let closed = flags == -1
        // Open for reading only (`1</dev/null`): every write fails, which Rust's stdout
        // would take as done too.
        || flags & libc::O_ACCMODE == libc::O_RDONLY
        || (flags & libc::O_ACCMODE == libc::O_RDWR && {
            use std::os::unix::fs::MetadataExt as _;
            let null = std::fs::metadata("/dev/null").map(|m| m.rdev()).ok();
            let ours = std::fs::metadata("/proc/self/fd/1").map(|m| m.rdev()).ok();
            null.is_some() && null == ours
        });
    if closed {
        return Err(Error::BadInput(
            "stdout is closed or not open for writing: alloclab prints its results there; redirect it to a file (> results.txt), or to /dev/null to keep only the files of --out".into(),
        ));
    }
    Ok(())
}

/// Prints a command's result on stdout; a closed pipe (`| head`: the reader chose to
/// stop) is not an error, any other failure to write is (exit 1).
pub fn print_out(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::RunFailed(format!("writing the results failed: {e}")))
        }
        _ => Ok(()),
    }
}

/// A CI service's format of `benches` (compare's and exec's), with the testbed and what
/// the bounds are said on stderr.
pub fn ci_output(
    format: crate::export::Format,
    benches: &[crate::export::ci::Benchmark],
    session: &crate::export::ci::Session,
    testbed: &crate::export::ci::Testbed,
) -> Result<String> {
    use crate::export::ci;
    let text = ci::render(format, benches, session, testbed)
        .unwrap_or_else(|| Err(format!("--format {} is not a CI format", format.name())))
        .map_err(Error::BadInput)?;
    for line in ci::stderr_lines(benches, testbed) {
        crate::fmt::say!("{line}");
    }
    Ok(text)
}

/// The error for `failed` of `total` runs, if any failed.
pub fn failed_runs(failed: usize, total: usize, what: &str) -> Result<()> {
    if failed > 0 {
        return Err(Error::RunFailed(format!(
            "{failed} of {total} {what} failed (see their rows)"
        )));
    }
    Ok(())
}
