//! `alloclab run`: experiments into results folders, one run at a time, each result
//! written as soon as it exists, with progress, resume and a clean stop on Ctrl-C; then
//! the exact cliffs of the size sweeps, and the report from the results in memory.

use crate::analysis::calibration::Calibration;
use crate::analysis::cliff::{self, FoundCliff, Metric};
use crate::analysis::eta::Eta;
use crate::analysis::jumps;
use crate::cli::RunArgs;
use crate::engine::schedule::{Next, Order, Pass, Rounds, Schedule};
use crate::engine::{self, calibrate, preflight, Executor, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::report_md::{self, Rebuilt};
use crate::export::results::{self, Loaded, Plan, ResultsDir, ResultsError};
use crate::fmt::{fmt_duration, group_thousands};
use crate::model::budget::Budget;
use crate::model::experiment::Experiment;
use crate::model::record::Cell;
use crate::model::run::RunSpec;
use crate::model::summary::SummaryRow;
use crate::ui::interrupt::interrupted;
use crate::ui::progress::{Estimate, Progress};
use std::path::PathBuf;
use std::time::Duration;

/// Refuses a run set larger than `max_runs`, with its size and the least time it takes.
fn check_run_count(experiments: &[Experiment], max_runs: u64) -> Result<()> {
    // A run is one worker process: with `processes = R`, every cell is R runs.
    let runs: u64 = experiments.iter().map(Experiment::process_count).sum();
    if runs <= max_runs {
        return Ok(());
    }
    let seconds: f64 = experiments.iter().map(Experiment::min_seconds).sum();
    let each: Vec<String> = experiments
        .iter()
        .map(|e| {
            format!(
                "{}: {}",
                e.path.display(),
                group_thousands(e.process_count() as i64)
            )
        })
        .collect();
    Err(Error::BadInput(format!(
        "{} runs ({}) would take at least {}, more than --max-runs {} allows; narrow the experiment (fewer sizes, allocators, threads) or raise --max-runs to run it on purpose",
        group_thousands(runs as i64),
        each.join(", "),
        fmt_duration(seconds),
        group_thousands(max_runs as i64)
    )))
}

/// Refuses an experiment whose idle phase alone takes the whole --timeout (`timeout_s`):
/// every worker idles `budget.idle_time` after its measured phase, so each would be
/// killed before it finished and every cell fail, after all the time it took.
fn check_idle_time(experiments: &[Experiment], timeout_s: f64) -> Result<()> {
    let timeout_ns = crate::model::budget::secs_to_ns(timeout_s);
    let Some(e) = experiments
        .iter()
        .find(|e| e.budget.idle_ns > 0 && e.budget.idle_ns >= timeout_ns)
    else {
        return Ok(());
    };
    let idle = e.budget.idle_ns as f64 / 1e9;
    // Room for the warm-up and the measured phase on top of the idle time: the default
    // --timeout's 300 s, within the 86,400 s a timeout may have.
    let raise = (idle + 300.0).ceil().min(86_400.0);
    let raise = if raise > idle {
        format!("raise --timeout above the idle time with room for the warm-up and the measured phase (e.g. --timeout {raise}), or ")
    } else {
        String::new()
    };
    Err(Error::BadInput(format!(
        "{}: budget.idle_time is {idle} s, and --timeout {timeout_s} s would kill every worker before its idle phase ended (each idles that long after its measured phase, on top of its warm-up and measurement); {raise}lower budget.idle_time well below {timeout_s} s",
        e.path.display()
    )))
}

/// What a row of a worker killed at --timeout tells the user to change: with an idle
/// phase in an experiment (the longest, with its file), that it counts in the worker's
/// time, and that it can be lowered.
fn timeout_hint(experiments: &[Experiment]) -> String {
    match experiments
        .iter()
        .filter(|e| e.budget.idle_ns > 0)
        .max_by_key(|e| e.budget.idle_ns)
    {
        None => "raise --timeout, or lower the experiment file's budget.min_time or sizes".into(),
        Some(e) => format!(
            "raise --timeout: each worker also idles {} s after its measured phase (budget.idle_time of {}); or lower the experiment file's budget.idle_time, budget.min_time or sizes",
            e.budget.idle_ns as f64 / 1e9,
            e.path.display()
        ),
    }
}

pub fn run(args: RunArgs, level: f64) -> Result<()> {
    let experiments = args.experiments().map_err(Error::bad)?;
    let (workers, mut executor, mut folders) = prepare(&args, &experiments)?;
    crate::engine::begin();
    // What observing costs on this machine now, recorded with every experiment (unless
    // asked not to: the reports then say it was not measured).
    let (min_time, rounds) = if args.quick { (0.02, 1) } else { (0.15, 6) };
    // ALLOCLAB_CALIBRATION_MIN_TIME: each calibration process's time, in seconds (the
    // tests' budget: they check the calibration's files, not its precision); recorded in
    // calibration.json and said in REPORT.md.
    let min_time = calibration_min_time().unwrap_or(min_time);
    if !args.no_calibration {
        crate::fmt::say!("calibrating the observer ({rounds} round(s))…");
    }
    let calibration = if args.no_calibration {
        None
    } else {
        calibration(&workers, min_time, rounds, level)
    };
    // Runs differ by orders of magnitude (32 to 2^24 elements in the size sweep): the ETA learns what each
    // kind costs as they run (see `plan_eta`).
    // Each experiment's processes, and one evidence process per cell it explains.
    let processes: u64 = experiments
        .iter()
        .map(|e| e.process_count() + e.evidence_runs().len() as u64)
        .sum();
    let mut progress = Progress::planned(processes as usize, Box::new(plan_eta(&experiments)));
    let mut failed = 0;
    for (exp, folder) in experiments.iter().zip(&mut folders) {
        let o = run_experiment(
            exp,
            folder,
            args.resume,
            &mut executor,
            &mut progress,
            calibration.as_ref(),
            level,
        )
        .map_err(Error::failed);
        let o = match o {
            Ok(o) => o,
            Err(e) => {
                progress.clear();
                return Err(e);
            }
        };
        folder
            .finish_missing(o.rebuilt.missing.clone())
            .map_err(Error::failed)?;
        failed += o.rebuilt.failed;
        progress.suspend(|| super::print_out(&said(&args, exp, &o)))?;
        if o.interrupted {
            progress.clear();
            return Err(Error::Interrupted(
                "completed runs are kept; `alloclab run --resume …` continues".into(),
            ));
        }
    }
    progress.finish();
    if failed > 0 {
        return Err(Error::RunFailed(format!(
            "{failed} cell(s) failed (see REPORT.md and runs/*.failed.json)"
        )));
    }
    Ok(())
}

/// Everything that can be refused is refused before any worker starts: the size of the
/// run set, memory, the worker binaries, the counting method, the folders (claimed, and
/// without --resume emptied of the measurement they held: one per folder).
fn prepare(
    args: &RunArgs,
    experiments: &[Experiment],
) -> Result<(std::path::PathBuf, ProcessExecutor, Vec<ResultsDir>)> {
    check_run_count(experiments, args.max_runs)?;
    check_idle_time(experiments, args.timeout)?;
    for exp in experiments {
        preflight::check_memory_here(&exp.runs())
            .map_err(|e| Error::BadInput(format!("{}: {e}", exp.path.display())))?;
    }
    let specs: Vec<RunSpec> = experiments.iter().flat_map(Experiment::runs).collect();
    let workers = preflight::check(&specs).map_err(Error::bad)?;
    let mut executor = ProcessExecutor::new(
        workers.clone(),
        args.counters,
        Duration::from_secs_f64(args.timeout),
    )
    .map_err(|why| Error::counters(args.counters, why))?;
    executor.timeout_hint = timeout_hint(experiments).into();
    executor.layout = args.layout;
    // Without --resume a run replaces what the folder held: one measurement per folder.
    let mut folders = experiments
        .iter()
        .map(|e| {
            let claim = if args.force_out {
                crate::export::folder::Claim::Force
            } else {
                crate::export::folder::Claim::Own
            };
            ResultsDir::open(&args.out.join(&e.name), claim)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(Error::bad)?;
    for f in &mut folders {
        f.start(!args.resume).map_err(Error::failed)?;
    }
    Ok((workers, executor, folders))
}

/// An experiment's result and its answer (the lines REPORT.md and report.html lead
/// with), for stdout, where `run … > out.txt` keeps them; progress stays on stderr.
fn said(args: &RunArgs, exp: &Experiment, o: &ExperimentOutcome) -> String {
    let status = format!(
        "{}: {}{}; {}; report in {}",
        exp.name,
        o.rebuilt.counts(),
        if o.skipped > 0 {
            format!(", {} kept from before (--resume)", o.skipped)
        } else {
            String::new()
        },
        crate::fmt::counted(o.rebuilt.plots, "plot", "plots"),
        o.dir.join("REPORT.md").display()
    );
    // In the reader's width, as the answer below it.
    let mut said = crate::fmt::wrap(&status, crate::fmt::screen_width(), "", "  ");
    if args.quick {
        said.push_str(&crate::fmt::wrap(
            crate::export::report_md::QUICK_NOTE,
            crate::fmt::screen_width(),
            "  note: ",
            "    ",
        ));
    }
    said.push_str(&o.rebuilt.answer.console(crate::fmt::screen_width()));
    said
}

/// ALLOCLAB_CALIBRATION_MIN_TIME, where set to a number of seconds above 0.
fn calibration_min_time() -> Option<f64> {
    let s = std::env::var("ALLOCLAB_CALIBRATION_MIN_TIME").ok()?;
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Some(v),
        _ => {
            crate::fmt::say!("warning: ALLOCLAB_CALIBRATION_MIN_TIME={s} is not a number of seconds above 0; ignored");
            None
        }
    }
}

/// What observing costs on this machine now (the founding case under glibc at 1,000,000
/// elements, `rounds` rounds of `min_time` s); None, said on stderr, where it failed.
fn calibration(
    workers: &std::path::Path,
    min_time: f64,
    rounds: u32,
    level: f64,
) -> Option<Calibration> {
    match calibrate::calibrate(
        workers,
        &crate::model::knobs::AllocatorSpec::plain(crate::model::spec::Allocator::System),
        1_000_000,
        min_time,
        rounds,
        level,
    ) {
        Ok(c) => Some(c),
        Err(e) => {
            crate::fmt::say!(
                "warning: observer calibration failed ({}); the reports will not have it",
                e.cause
            );
            None
        }
    }
}

/// A run's expected cost for the ETA (see [`Budget::expected_seconds`]).
fn expected(budget: &Budget, spec: &RunSpec) -> f64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    budget.expected_seconds(spec.size, spec.threads, cpus)
}

/// The ETA's group of a run: runs of one experiment at one size and thread count cost
/// about the same (the run order is shuffled, so every group is sampled early).
fn eta_key(exp: &Experiment, spec: &RunSpec) -> String {
    format!("{}|{}|{}", exp.name, spec.size, spec.threads)
}

/// The ETA's group of an experiment's bisection probes.
fn cliff_key(experiment: &str) -> String {
    format!("{experiment}|cliffs")
}

/// Probes one bisection takes at most between neighbouring sizes `from` < `to`: both
/// ends, then halving the gap down to the resolution.
fn bisection_probes(from: u64, to: u64) -> usize {
    let steps = (to.saturating_sub(from) as f64 / cliff::auto_resolution(from) as f64)
        .log2()
        .ceil()
        .max(0.0);
    2 + steps as usize
}

/// Everything `run` will do, for the ETA: each experiment's processes grouped by size
/// and threads with the guide's cost, and, where cliffs are looked for, one bisection per
/// series (allocator, variant, …) between neighbouring sizes in the middle of the sweep —
/// replanned with the changes actually found once the sweep is over.
/// The progress display learns the time left from the lab's estimate.
impl Estimate for Eta {
    fn done(&mut self, key: &str, seconds: f64) {
        Eta::done(self, key, seconds);
    }
    fn skip(&mut self, key: &str) {
        Eta::skip(self, key);
    }
    fn replan(&mut self, key: &str, part: &str, count: usize, guide: f64) {
        Eta::replan(self, key, part, count, guide);
    }
    fn remaining(&self) -> Option<f64> {
        Eta::remaining(self)
    }
}

fn plan_eta(experiments: &[Experiment]) -> Eta {
    let mut eta = Eta::default();
    for e in experiments {
        for s in e.runs() {
            let n = e.processes.max(1) as usize;
            eta.plan(&eta_key(e, &s), &e.name, n, expected(&e.budget, &s));
        }
        let evidence = e.evidence_runs();
        if let Some(s) = evidence.iter().max_by_key(|s| s.size) {
            eta.plan(
                &evidence_key(e),
                &e.name,
                evidence.len(),
                expected(&e.budget, s),
            );
        }
        if e.find_cliffs && e.sizes.len() > 1 {
            let mid = e.sizes.len() / 2;
            let (from, to) = (e.sizes[mid - 1], e.sizes[mid]);
            let series = e.run_count() as usize / e.sizes.len();
            let probe = Budget::probe(e.budget.max_iters);
            let spec = RunSpec {
                size: from,
                ..e.runs()[0].clone()
            };
            eta.plan(
                &cliff_key(&e.name),
                &e.name,
                series * bisection_probes(from, to),
                expected(&probe, &spec),
            );
        }
    }
    eta
}

/// What happened to one experiment.
pub struct ExperimentOutcome {
    pub dir: PathBuf,
    pub rebuilt: Rebuilt,
    pub skipped: usize,
    pub interrupted: bool,
}

/// Runs (or, with `resume`, completes) one experiment into its open results folder: each
/// run is saved as it finishes, the report is written from the outcomes in memory.
pub fn run_experiment(
    exp: &Experiment,
    results: &ResultsDir,
    resume: bool,
    executor: &mut dyn Executor,
    progress: &mut Progress,
    calibration: Option<&Calibration>,
    level: f64,
) -> Result<ExperimentOutcome, ResultsError> {
    let dir = results.root.clone();
    let plan = Plan::new(exp, level);
    results.save_plan(&plan)?;
    if let Some(c) = calibration {
        results.save_calibration(c)?;
    }
    let (mut cells, skipped) = measure_cells(exp, &plan, results, resume, executor, progress)?;
    record_evidence(exp, &plan, &mut cells, results, resume, executor, progress)?;
    let (cliffs, unfinished) = cliffs_of(exp, &cells, results, executor, progress)?;
    let loaded = Loaded {
        plan,
        cells,
        calibration: calibration.cloned(),
        cliffs,
        unfinished,
    };
    let rebuilt = report_md::rebuild(results.folder(), &loaded, false)?;
    Ok(ExperimentOutcome {
        dir,
        rebuilt,
        skipped,
        interrupted: interrupted(),
    })
}

/// Every cell's processes, one of every cell per round in the one schedule: the order
/// within round r is shuffled from the experiment's seed + r, so that drift reaches every
/// cell (and sizes alike, in a sweep, instead of the large ones all at the end). With
/// `resume`, a process already on disk for exactly this spec and budget is kept, not run
/// again. The cells that have a process, and how many were kept.
fn measure_cells(
    exp: &Experiment,
    plan: &Plan,
    results: &ResultsDir,
    resume: bool,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) -> Result<(Vec<Cell>, usize), ResultsError> {
    let r = exp.processes.max(1);
    let cells: Vec<Cell> = plan
        .runs
        .iter()
        .map(|run| Cell {
            spec: run.spec.clone(),
            runs: Vec::new(),
            level: plan.level(),
            evidence: None,
        })
        .collect();
    let mut runs = Runs {
        exp,
        plan,
        results,
        resume,
        executor,
        progress,
        cells,
        skipped: 0,
        error: None,
    };
    Schedule {
        subjects: plan.runs.len(),
        warmup: 0,
        seed: exp.seed,
        order: Order::Shuffled,
    }
    .run(&mut runs);
    let Runs {
        mut cells,
        skipped,
        error,
        ..
    } = runs;
    if let Some(e) = error {
        return Err(e);
    }
    if interrupted() {
        // Not reached this time: with --resume, an earlier run's record of exactly this
        // spec and budget still counts (without, the folder held nothing earlier).
        for (i, run) in plan.runs.iter().enumerate() {
            for round in 0..r {
                if resume && cells[i].runs.iter().all(|(done, _)| *done != round) {
                    let id = results::process_id(&run.id, round, r);
                    if let Some(record) = results.completed(&id, &run.spec, exp) {
                        cells[i].runs.push((round, Ok(record)));
                    }
                }
            }
        }
    }
    for c in &mut cells {
        c.runs.sort_by_key(|(round, _)| *round);
    }
    cells.retain(|c| !c.runs.is_empty());
    Ok((cells, skipped))
}

/// The evidence of the cells [`Experiment::evidence_runs`] names that have a process:
/// one recorded process each, kept in the folder as it comes (with `resume`, one kept
/// from before is not recorded again). Stops at an interrupt, keeping what it has.
fn record_evidence(
    exp: &Experiment,
    plan: &Plan,
    cells: &mut [Cell],
    results: &ResultsDir,
    resume: bool,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) -> Result<(), ResultsError> {
    let wanted = exp.evidence_runs();
    let key = evidence_key(exp);
    for run in plan.runs.iter().filter(|r| wanted.contains(&r.spec)) {
        let Some(cell) = cells.iter_mut().find(|c| c.spec == run.spec) else {
            // Not measured (interrupted, or failed in every process): nothing to explain.
            progress.skip_planned(&key);
            continue;
        };
        if resume {
            if let Some(kept) = results.kept_evidence(&run.id) {
                cell.evidence = Some(kept);
                progress.skip_planned(&key);
                continue;
            }
        }
        progress.work_started();
        let what = format!("{}: evidence of {}", exp.name, run.spec);
        if !crate::engine::record_cell(cell, &exp.budget, executor, progress, &what) {
            return Ok(());
        }
        progress.work_done(&key);
        if let Some(e) = &cell.evidence {
            results.save_evidence(&run.id, e)?;
        }
    }
    Ok(())
}

/// The ETA's group of an experiment's evidence runs.
fn evidence_key(exp: &Experiment) -> String {
    format!("{}|evidence", exp.name)
}

/// The exact cliffs (bisected and, where asked, confirmed; saved as found), or an
/// earlier run's where none were looked for; and the steps an interrupt cut.
fn cliffs_of(
    exp: &Experiment,
    cells: &[Cell],
    results: &ResultsDir,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) -> Result<(Vec<crate::analysis::cliff::FoundCliff>, Vec<String>), ResultsError> {
    // The steps after the runs that an interrupt cut (said on every page of the folder).
    let mut unfinished = Vec::new();
    let cliffs = if exp.find_cliffs && !interrupted() {
        let budget = Budget::probe(exp.budget.max_iters);
        let mut cliffs = find_cliffs(cells, &budget, &exp.name, executor, progress);
        // Saved as found, then again with what moving their thresholds showed.
        results.save_cliffs(&cliffs)?;
        if interrupted() {
            unfinished.push(BISECTION_CUT.to_string());
        } else if exp.confirm_cliffs {
            confirm_cliffs(&mut cliffs, cells, &budget, executor, progress);
            results.save_cliffs(&cliffs)?;
            let open = unconfirmed(&cliffs);
            if interrupted() && open > 0 {
                unfinished.push(format!(
                    "the confirmation of {} (interrupted; `alloclab run --resume` with the same options measures it)",
                    crate::fmt::counted(open, "cliff", "cliffs")
                ));
            }
        }
        cliffs
    } else {
        if exp.find_cliffs {
            unfinished.push(BISECTION_CUT.to_string());
        }
        // Not looked for this time: the cliffs an earlier run found stay in the report.
        results::load_cliffs(&results.root)
    };
    Ok((cliffs, unfinished))
}

/// The processes of an experiment as the schedule runs them, each saved as it ends.
struct Runs<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    results: &'a ResultsDir,
    resume: bool,
    executor: &'a mut dyn Executor,
    progress: &'a mut Progress,
    cells: Vec<Cell>,
    skipped: usize,
    error: Option<ResultsError>,
}
impl Rounds for Runs<'_> {
    fn more(&mut self, done: u32) -> bool {
        done < self.exp.processes.max(1)
    }
    fn step(&mut self, i: usize, pass: Pass, _: usize) -> Next {
        let Pass::Round(round) = pass else {
            return Next::Keep;
        };
        let (exp, r) = (self.exp, self.exp.processes.max(1));
        let run = &self.plan.runs[i];
        let id = results::process_id(&run.id, round, r);
        let key = eta_key(exp, &run.spec);
        if self.resume {
            if let Some(record) = self.results.completed(&id, &run.spec, exp) {
                self.skipped += 1;
                self.progress.skip_planned(&key);
                self.cells[i].runs.push((round, Ok(record)));
                return Next::Keep;
            }
        }
        let what = if r > 1 {
            format!("{}: {} (round {}/{r})", exp.name, run.spec, round + 1)
        } else {
            format!("{}: {}", exp.name, run.spec)
        };
        self.progress.start(&what);
        let result = self.executor.execute(&run.spec, &exp.budget);
        if interrupted() {
            // The worker got the same Ctrl-C: its result is not a measurement.
            return Next::Stop;
        }
        let saved = match &result {
            Ok(record) => self.results.save_run(&id, record),
            Err(failure) => {
                self.progress
                    .say(&format!("{}: {id} FAILED: {}", exp.name, failure.cause));
                self.results.save_failure(&id, &run.spec, failure)
            }
        };
        if let Err(e) = saved {
            self.error = Some(e);
            return Next::Stop;
        }
        self.progress.finish_planned(&key);
        self.cells[i].runs.push((round, result));
        Next::Keep
    }
}
/// What an interrupted run says of its cliffs' bisection.
const BISECTION_CUT: &str =
    "the bisection of the exact cliffs (interrupted; `alloclab run --resume` measures it)";

/// Bisected cliffs whose cause could be moved to confirm it and has no confirmation.
fn unconfirmed(cliffs: &[FoundCliff]) -> usize {
    cliffs
        .iter()
        .filter(|c| c.unresolved.is_none() && c.confirmation.is_none())
        .filter(|c| {
            let live = c.workload.live_buffers(c.variant);
            crate::analysis::thresholds::cause(
                &c.allocator,
                live,
                c.onset(),
                c.below_size,
                c.above_size,
            )
            .movable()
            .is_some()
        })
        .count()
}

/// Tests the cause of every bisected cliff that sits at a known threshold of its
/// allocator ([`crate::analysis::thresholds`]): the threshold is moved with its knob and
/// the cliff bisected again, from below both its old low side and where the moved
/// threshold's rule puts it to a quarter beyond both. Confirmed when the new cliff holds that prediction; "did not
/// move" when the change is still where it was. One bisection per allocator and
/// threshold: the allocator's other cliffs at the same threshold share its result.
fn confirm_cliffs(
    found: &mut [FoundCliff],
    cells: &[Cell],
    budget: &Budget,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) {
    use crate::analysis::cliff::Confirmation;
    use crate::analysis::thresholds;
    // Measured once per allocator and threshold (and once more for the cliffs only near
    // it, whose verdict differs).
    let mut done: Vec<(String, String, Confirmation)> = Vec::new();
    for slot in found.iter_mut() {
        if interrupted() {
            return;
        }
        let c = slot.clone();
        if c.unresolved.is_some() {
            continue;
        }
        let live = c.workload.live_buffers(c.variant);
        let cause = thresholds::cause(&c.allocator, live, c.onset(), c.below_size, c.above_size);
        let Some((threshold, moved)) = cause.movable() else {
            continue;
        };
        let key = format!(
            "{}{}",
            threshold.name,
            if matches!(cause, thresholds::Cause::At { .. }) {
                ""
            } else {
                " (near)"
            }
        );
        if let Some((_, _, conf)) = done.iter().find(|(a, t, _)| *a == c.allocator && *t == key) {
            slot.confirmation = Some(conf.clone());
            continue;
        }
        let Some(base) = cells
            .iter()
            .map(|cell| &cell.spec)
            .find(|s| {
                s.allocator_label() == c.allocator
                    && s.variant == c.variant
                    && s.workload == c.workload
                    && s.threads == c.threads
            })
            .cloned()
        else {
            continue;
        };
        let mut conf = Confirmation::of(moved, threshold);
        let knobs = match moved.parse::<crate::model::knobs::AllocatorSpec>() {
            Ok(s) if s.allocator == base.allocator => s.knobs,
            Ok(_) | Err(_) => {
                conf.verdict = format!("not measured: {moved} is not a spec of {}", base.allocator);
                done.push((c.allocator.clone(), key.clone(), conf.clone()));
                slot.confirmation = Some(conf);
                continue;
            }
        };
        let spec = crate::model::run::RunSpec { knobs, ..base };
        let Some(rule) = thresholds::predicted_under(&spec.allocator_label(), live, threshold)
        else {
            continue;
        };
        conf.predict(&rule);
        let at = matches!(cause, thresholds::Cause::At { .. });
        let Some(conf) = measure_confirmation(
            &c, &spec, threshold, &rule, at, conf, budget, executor, progress,
        ) else {
            // A bisection cut short proves nothing: no verdict is made of it.
            return;
        };
        done.push((c.allocator.clone(), key.clone(), conf.clone()));
        slot.confirmation = Some(conf);
    }
}

/// A confirmation measured: the cliff bisected again under `spec` (its threshold moved)
/// from below both the old cliff and the prediction to beyond both, and judged; None when
/// an interrupt cut the bisection short.
#[allow(clippy::too_many_arguments)]
fn measure_confirmation(
    c: &FoundCliff,
    spec: &crate::model::run::RunSpec,
    threshold: &crate::analysis::thresholds::Threshold,
    rule: &crate::analysis::thresholds::Threshold,
    at: bool,
    mut conf: crate::analysis::cliff::Confirmation,
    budget: &Budget,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) -> Option<crate::analysis::cliff::Confirmation> {
    let metric = Metric::of_name(&c.metric);
    // From below both the old cliff and the prediction to beyond both: the onset
    // found is where the change now starts, moved up or down, or not at all.
    let (from, to) = cliff::confirm_range(c.below_size, c.above_size, rule);
    progress.say(&format!(
        "confirming: {} {} {} at {}: bisecting under {} between {} and {} elements (predicted {})",
        c.allocator,
        c.variant,
        metric.name(),
        threshold.name,
        spec.allocator_label(),
        crate::fmt::group_thousands(from as i64),
        crate::fmt::group_thousands(to as i64),
        rule.predicted_text()
    ));
    let mut measure = |size| engine::probe(executor, spec, budget, size, metric);
    let found = cliff::find(
        &mut measure,
        from,
        to,
        metric,
        metric.trend(),
        cliff::auto_resolution(from),
        &mut |_| {},
    );
    if interrupted() {
        return None;
    }
    conf.judge(
        at,
        rule,
        (c.below_size, c.above_size),
        (from, to),
        metric,
        &found,
    );
    progress.say(&format!("  {}", conf.describe()));
    Some(conf)
}

/// Bisects every change between neighbouring sizes of a finished experiment to the exact
/// size, each probe run with `budget`, and records one process either side; all with
/// the layout held fixed ([`Executor::set_layout`]).
fn find_cliffs(
    cells: &[Cell],
    budget: &Budget,
    experiment: &str,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) -> Vec<FoundCliff> {
    let mode = executor.set_layout(crate::model::layout::LayoutMode::Fixed);
    let found = find_cliffs_fixed(cells, budget, experiment, executor, progress);
    executor.set_layout(mode);
    found
}

fn find_cliffs_fixed(
    cells: &[Cell],
    budget: &Budget,
    experiment: &str,
    executor: &mut dyn Executor,
    progress: &mut Progress,
) -> Vec<FoundCliff> {
    let rows: Vec<SummaryRow> = cells.iter().map(crate::analysis::cells::row).collect();
    let mut found = Vec::new();
    let all = [
        (Metric::Faults, jumps::fault_jumps(&rows)),
        (Metric::Syscalls, jumps::syscall_jumps(&rows)),
    ];
    // The ETA now knows the bisections to do: at most this many probes.
    let probes: usize = all
        .iter()
        .flat_map(|(_, js)| js)
        .map(|j| bisection_probes(j.from_size, j.to_size))
        .sum();
    let eta_key = cliff_key(experiment);
    let guide = cells.first().map_or(0.0, |c| expected(budget, &c.spec));
    progress.replan(&eta_key, experiment, probes, guide);
    for (metric, jumps) in all {
        for j in jumps {
            if interrupted() {
                return found;
            }
            let base = &cells[j.from_row].spec;
            progress.say(&format!(
                "bisecting: {} {} {} between {} and {} elements",
                j.allocator,
                j.variant,
                metric.name(),
                j.from_size,
                j.to_size
            ));
            let mut measure = |size| {
                progress.work_started();
                let p = engine::probe(executor, base, budget, size, metric);
                progress.work_done(&eta_key);
                p
            };
            match cliff::find(
                &mut measure,
                j.from_size,
                j.to_size,
                metric,
                metric.trend(),
                cliff::auto_resolution(j.from_size),
                &mut |_| {},
            ) {
                Ok(c) => {
                    // What the calls and faults did either side: one recorded probe each.
                    let mut cliff = FoundCliff::new(base, metric, &c);
                    let evidence = [c.below.size, c.above.size].map(|size| {
                        let spec = RunSpec {
                            size,
                            ..base.clone()
                        };
                        progress.work_started();
                        let e = executor.evidence(&spec, budget);
                        progress.work_done(&eta_key);
                        e
                    });
                    cliff.evidence = (!interrupted()).then_some(evidence);
                    found.push(cliff);
                }
                Err(e) => {
                    progress.say(&format!("  not found: {e}"));
                    // Every change found is accounted for: this one with its reason.
                    let why = match e {
                        cliff::CliffError::NoChange { .. } => format!(
                            "the probes (shorter runs than the sweep's) saw no change between these sizes: {e}; the sweep's values there vary from run to run"
                        ),
                        e => e.to_string(),
                    };
                    found.push(FoundCliff::unresolved(base, metric, &j, why));
                }
            }
        }
    }
    found
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn experiment(idle: &str) -> Experiment {
        let text = format!(
            "description = \"idle\"\nworkloads = [\"scale\"]\nsizes = [2000]\n\n[budget]\nidle_time = {idle}\n"
        );
        Experiment::parse(std::path::Path::new("idle.toml"), &text, false).unwrap()
    }

    /// The idle time alone at least the timeout is refused; below it, not; without an
    /// idle phase the hint is what it was, with one it names it.
    #[test]
    fn an_idle_time_of_the_whole_timeout_is_refused_and_the_hint_names_it() {
        let e = [experiment("5.0")];
        for timeout in [5.0, 4.999] {
            let why = check_idle_time(&e, timeout).unwrap_err().to_string();
            assert!(
                why.starts_with("idle.toml: budget.idle_time is 5 s"),
                "{why}"
            );
        }
        assert!(check_idle_time(&e, 5.001).is_ok());
        assert!(check_idle_time(&[experiment("0")], 0.001).is_ok());
        let hint = timeout_hint(&[experiment("0"), experiment("2.5")]);
        assert!(
            hint.contains("each worker also idles 2.5 s after its measured phase (budget.idle_time of idle.toml)"),
            "{hint}"
        );
        assert!(!timeout_hint(&[experiment("0")]).contains("idle"));
    }
}
