//! `alloclab run`: experiments into results folders, one run at a time, each result
//! written as soon as it exists, with progress, resume and a clean stop on Ctrl-C.

use crate::driver::Executor;
use crate::experiment::{run_id, Experiment};
use crate::export::report_md::{self, Rebuilt};
use crate::export::results::{Plan, ResultsDir, ResultsError};
use crate::spec::RunSpec;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on Ctrl-C (SIGINT) and SIGTERM stop the run after the current worker (which
/// gets the terminal's SIGINT too) instead of killing the driver mid-write.
pub fn stop_on_interrupt() {
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Progress on stderr: a redrawn bar on a terminal, one line per run otherwise.
pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    tty: bool,
}

fn fmt_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

impl Progress {
    pub fn new(total: usize) -> Self {
        Progress {
            total,
            done: 0,
            started: Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn eta(&self) -> String {
        if self.done == 0 {
            return "ETA …".into();
        }
        let per = self.started.elapsed().as_secs_f64() / self.done as f64;
        format!(
            "ETA {}",
            fmt_duration(per * (self.total - self.done) as f64)
        )
    }

    pub fn start(&mut self, experiment: &str, spec: &RunSpec) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let width = 24;
            let filled = (self.done * width).checked_div(self.total).unwrap_or(width);
            let _ = write!(
                err,
                "\r\x1b[2K[{}{}] {}/{} {}  {experiment}: {spec}",
                "#".repeat(filled),
                ".".repeat(width - filled),
                self.done,
                self.total,
                self.eta()
            );
        } else {
            let _ = writeln!(
                err,
                "[{}/{}] {experiment}: {spec} ({})",
                self.done + 1,
                self.total,
                self.eta()
            );
        }
        let _ = err.flush();
    }

    pub fn finish_one(&mut self) {
        self.done += 1;
    }

    pub fn finish(&self) {
        if self.tty {
            eprintln!(
                "\r\x1b[2K[{}] {}/{} runs in {}",
                "#".repeat(24),
                self.done,
                self.total,
                fmt_duration(self.started.elapsed().as_secs_f64())
            );
        }
    }

    /// Prints a message on its own line.
    pub fn say(&self, msg: &str) {
        if self.tty {
            eprint!("\r\x1b[2K");
        }
        eprintln!("{msg}");
    }
}

/// What happened to one experiment.
pub struct ExperimentOutcome {
    pub dir: PathBuf,
    pub rebuilt: Rebuilt,
    pub skipped: usize,
    pub interrupted: bool,
}

/// Runs (or, with `resume`, completes) one experiment into `out/<name>/`.
pub fn run_experiment(
    exp: &Experiment,
    out: &Path,
    resume: bool,
    executor: &mut dyn Executor,
    progress: &mut Progress,
    calibration: Option<&crate::calibrate::Calibration>,
) -> Result<ExperimentOutcome, ResultsError> {
    let dir = out.join(&exp.name);
    let results = ResultsDir::open(&dir)?;
    let plan = Plan::new(exp);
    results.save_plan(&plan)?;
    if let Some(c) = calibration {
        results.save_calibration(c)?;
    }
    let mut skipped = 0;
    for run in &plan.runs {
        if interrupted() {
            break;
        }
        if resume && results.completed(&run.id, &run.spec, exp).is_some() {
            skipped += 1;
            progress.finish_one();
            continue;
        }
        progress.start(&exp.name, &run.spec);
        let outcome = executor.execute(&run.spec);
        if interrupted() {
            // The worker got the same Ctrl-C: its result is not a measurement.
            break;
        }
        match outcome {
            Ok(record) => results.save_run(&run.id, &record)?,
            Err(failure) => {
                progress.say(&format!(
                    "{}: {} FAILED: {}",
                    exp.name,
                    run_id(&run.spec),
                    failure.cause
                ));
                results.save_failure(&run.id, &run.spec, &failure)?;
            }
        }
        progress.finish_one();
    }
    if exp.find_cliffs && !interrupted() {
        // Each probe only has to tell which side of the threshold it is on.
        executor.set_budget(crate::measure::Budget {
            warmup_time_ns: 10_000_000,
            warmup_iters: 1,
            min_time_ns: 50_000_000,
            min_iters: 3,
            max_iters: exp.budget.max_iters,
        });
        let cliffs = find_cliffs(&dir, executor, progress);
        executor.set_budget(exp.budget);
        let cliffs = cliffs?;
        results.save_cliffs(&cliffs)?;
    }
    let rebuilt = report_md::rebuild(&dir)?;
    Ok(ExperimentOutcome {
        dir,
        rebuilt,
        skipped,
        interrupted: interrupted(),
    })
}

/// Bisects every change between neighbouring sizes of a finished experiment to the exact
/// size, with a short budget per probe.
fn find_cliffs(
    dir: &Path,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) -> Result<Vec<crate::cliff::FoundCliff>, ResultsError> {
    use crate::cliff::{self, Metric};
    let loaded = crate::export::results::load(dir)?;
    let rows: Vec<crate::report::SummaryRow> = loaded
        .outcomes
        .iter()
        .map(crate::report::SummaryRow::from_outcome)
        .collect();
    let mut found = Vec::new();
    for (metric, jumps) in [
        (
            Metric::Faults,
            report_md::jumps(&rows, |r| r.minflt_per_iter, 10.0),
        ),
        (
            Metric::Syscalls,
            report_md::jumps(&rows, |r| r.memory_syscalls_per_iter, 0.5),
        ),
    ] {
        for j in jumps {
            if interrupted() {
                return Ok(found);
            }
            let Some(base) = loaded.outcomes.iter().map(|o| &o.spec).find(|s| {
                s.allocator_label() == j.allocator
                    && s.workload == j.workload
                    && s.variant == j.variant
                    && s.threads == j.threads
                    && s.size == j.from_size
            }) else {
                continue;
            };
            progress.say(&format!(
                "bisecting: {} {} {} between {} and {} elements",
                j.allocator,
                j.variant,
                metric.name(),
                j.from_size,
                j.to_size
            ));
            let resolution = cliff::auto_resolution(j.from_size);
            match cliff::find(
                executor,
                base,
                j.from_size,
                j.to_size,
                metric,
                resolution,
                &mut |_| {},
            ) {
                Ok(c) => found.push(cliff::FoundCliff::new(base, metric, &c)),
                Err(e) => progress.say(&format!("  not found: {e}")),
            }
        }
    }
    Ok(found)
}
