//! `alloclab`, the driver: parses commands, spawns one worker process per run, prints.

use alloclab::cli::{Cli, Command, ComparePlan, Format, RunPlan};
use alloclab::driver::{self, Outcome};
use alloclab::report::{self, SummaryRow};
use alloclab::runner;
use alloclab::spec::{valid_names, Allocator, Variant, Workload};
use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

/// Exit status when some run failed or runs disagree on their output.
const EXIT_RUN_FAILED: u8 = 1;
/// Exit status for bad input (clap uses the same for its own usage errors).
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::List => {
            println!("allocators: {}", valid_names::<Allocator>());
            println!("workloads:  {}", valid_names::<Workload>());
            println!("variants:   {}", valid_names::<Variant>());
            ExitCode::SUCCESS
        }
        Command::Compare(args) => match args.plan() {
            Ok(plan) => compare(plan),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(EXIT_BAD_INPUT)
            }
        },
        Command::Run(args) => match args.plan() {
            Ok(plan) => run(plan),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(EXIT_BAD_INPUT)
            }
        },
        Command::Report(args) => report_dir(&args.dir),
        Command::Calibrate(args) => calibrate(&args),
        Command::Cliff(args) => cliff(args),
        Command::Tune(args) => tune(args),
        Command::Exec(args) => exec(&args),
        Command::ProbePreload { kind, knob } => {
            let report = alloclab::exec::probe::probe_here(&kind, &knob);
            match serde_json::to_string(&report) {
                Ok(t) => {
                    println!("{t}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(EXIT_RUN_FAILED)
                }
            }
        }
    }
}

/// An executor with a short budget, once the allocators' workers are found and `specs`
/// fit in memory.
fn short_executor(
    allocators: &[Allocator],
    specs: &[alloclab::spec::RunSpec],
    min_time: f64,
    counters: alloclab::counters::CounterMode,
) -> Result<driver::ProcessExecutor, String> {
    let dir = driver::workers_dir().map_err(|e| e.to_string())?;
    driver::check_workers(&dir, allocators).map_err(|e| e.to_string())?;
    driver::check_memory_here(specs).map_err(|e| e.to_string())?;
    let budget = alloclab::measure::Budget {
        min_time_ns: alloclab::measure::secs_to_ns(min_time),
        warmup_time_ns: 20_000_000,
        ..Default::default()
    };
    Ok(driver::ProcessExecutor::new(
        dir,
        budget,
        counters,
        std::time::Duration::from_secs(300),
    ))
}

fn cliff(args: alloclab::cli::CliffArgs) -> ExitCode {
    let alloc: alloclab::knobs::AllocatorSpec = match args.allocator.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    if args.from >= args.to {
        eprintln!(
            "error: --from ({}) must be smaller than --to ({})",
            args.from, args.to
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let base = alloclab::spec::RunSpec {
        allocator: alloc.allocator,
        workload: args.workload,
        variant: args.variant,
        size: args.to,
        threads: 1,
        seed: 42,
        knobs: alloc.knobs.clone(),
        thp: args.thp,
    };
    let mut exec = match short_executor(
        &[alloc.allocator],
        std::slice::from_ref(&base),
        args.min_time,
        args.counters,
    ) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let metric = args.metric;
    let mut show = |p: &alloclab::cliff::Probe| {
        eprintln!(
            "  size {:>12}: {} {} per iteration",
            report::fmt_count(p.size as f64),
            report::fmt_count(p.value),
            metric.name()
        );
    };
    match alloclab::cliff::find(&mut exec, &base, args.from, args.to, metric, 1, &mut show) {
        Ok(c) => {
            let side = |p: &alloclab::cliff::Probe| {
                format!(
                    "{} elements ({} per f64 buffer): {} {} per iteration, p50 {}",
                    report::fmt_count(p.size as f64),
                    driver::human_bytes(p.size * 8),
                    report::fmt_count(p.value),
                    metric.name(),
                    report::fmt_ns(p.record.p50_ns as f64)
                )
            };
            println!(
                "{} {} {}: {} per iteration cross {} between",
                base.allocator_label(),
                base.workload,
                base.variant,
                metric.name(),
                metric.threshold()
            );
            println!("  below: {}", side(&c.below));
            println!("  above: {}", side(&c.above));
            println!("({} probes)", c.probes);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_RUN_FAILED)
        }
    }
}

fn tune(args: alloclab::cli::TuneArgs) -> ExitCode {
    let allocators = match &args.allocators {
        Some(list) => match alloclab::spec::parse_choice_list::<Allocator>(list) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        },
        None => <Allocator as alloclab::spec::Choice>::ALL.to_vec(),
    };
    let specs: Vec<alloclab::spec::RunSpec> = allocators
        .iter()
        .flat_map(|a| alloclab::tune::specs(*a))
        .map(|a| alloclab::spec::RunSpec {
            allocator: a.allocator,
            workload: args.workload,
            variant: args.variant,
            size: args.size,
            threads: 1,
            seed: 42,
            knobs: a.knobs,
            thp: Default::default(),
        })
        .collect();
    let mut exec = match short_executor(&allocators, &specs, args.min_time, args.counters) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let total = specs.len();
    let outcomes = driver::run_all(&specs, &mut exec, &mut |i, s| {
        eprintln!("[{}/{total}] {s}", i + 1)
    });
    let rows: Vec<SummaryRow> = outcomes.iter().map(SummaryRow::from_outcome).collect();
    let text = match args.format {
        Format::Json => report::to_json(&rows) + "\n",
        Format::Csv => report::to_csv(&rows),
        Format::Markdown => report::to_markdown(&rows),
        Format::Table => {
            let mut t = format!(
                "{} {} at {} elements\n\n",
                args.workload,
                args.variant,
                report::fmt_count(args.size as f64)
            );
            t.push_str(&report::to_table(&rows));
            t.push('\n');
            for line in alloclab::tune::verdicts(&rows) {
                t.push_str(&line);
                t.push('\n');
            }
            t.push_str("\nWhy each set was tried:\n");
            for a in &allocators {
                for (knobs, why) in alloclab::tune::curated(*a) {
                    let label = if knobs.is_empty() {
                        a.to_string()
                    } else {
                        format!("{a}:{knobs}")
                    };
                    t.push_str(&format!("  {label}: {why}\n"));
                }
            }
            t
        }
    };
    print!("{text}");
    if rows.iter().any(|r| r.status != "ok") {
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    ExitCode::SUCCESS
}

fn calibrate(args: &alloclab::cli::CalibrateArgs) -> ExitCode {
    let workers = match driver::workers_dir()
        .and_then(|d| driver::check_workers(&d, &[Allocator::System]).map(|_| d))
        .and_then(|d| {
            driver::check_memory_here(&[alloclab::spec::RunSpec {
                allocator: Allocator::System,
                workload: Workload::Scale,
                variant: Variant::OutOfPlace,
                size: args.size,
                threads: 1,
                seed: 42,
                knobs: Vec::new(),
                thp: Default::default(),
            }])
            .map(|_| d)
        }) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    match alloclab::calibrate::calibrate(&workers, args.size, args.min_time, args.rounds) {
        Ok(c) => {
            if args.json {
                println!("{}", serde_json::to_string_pretty(&c).unwrap_or_default());
            } else {
                for line in c.describe() {
                    println!("{line}");
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: calibration failed: {}", e.cause);
            ExitCode::from(EXIT_RUN_FAILED)
        }
    }
}

/// Exit status after Ctrl-C, as shells report it.
const EXIT_INTERRUPTED: u8 = 130;

fn run(plan: RunPlan) -> ExitCode {
    runner::stop_on_interrupt();
    let total = plan.experiments.iter().map(|e| e.runs().len()).sum();
    // What observing costs on this machine now, recorded with every experiment.
    let (min_time, rounds) = if plan.args.quick { (0.02, 1) } else { (0.3, 2) };
    eprintln!("calibrating the observer ({rounds} round(s))…");
    let calibration =
        match alloclab::calibrate::calibrate(&plan.workers_dir, 1_000_000, min_time, rounds) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!(
                    "warning: observer calibration failed ({}); the reports will not have it",
                    e.cause
                );
                None
            }
        };
    let mut progress = runner::Progress::new(total);
    let mut failed = 0;
    let mut executor = driver::ProcessExecutor::new(
        plan.workers_dir.clone(),
        alloclab::measure::Budget::default(),
        plan.args.counters,
        std::time::Duration::from_secs_f64(plan.args.timeout),
    );
    for exp in &plan.experiments {
        alloclab::driver::Executor::set_budget(&mut executor, exp.budget);
        match runner::run_experiment(
            exp,
            &plan.args.out,
            plan.args.resume,
            &mut executor,
            &mut progress,
            calibration.as_ref(),
        ) {
            Ok(o) => {
                failed += o.rebuilt.failed;
                progress.say(&format!(
                    "{}: {} of {} runs ok, {} failed{}; {} plots; report in {}",
                    exp.name,
                    o.rebuilt.ok,
                    o.rebuilt.planned,
                    o.rebuilt.failed,
                    if o.skipped > 0 {
                        format!(", {} kept from before (--resume)", o.skipped)
                    } else {
                        String::new()
                    },
                    o.rebuilt.plots,
                    o.dir.join("REPORT.md").display()
                ));
                if o.interrupted {
                    progress.say(
                        "interrupted: completed runs are kept; `alloclab run --resume …` continues",
                    );
                    return ExitCode::from(EXIT_INTERRUPTED);
                }
            }
            Err(e) => {
                progress.say(&format!("error: {e}"));
                return ExitCode::from(match e {
                    alloclab::export::results::ResultsError::Locked { .. } => EXIT_BAD_INPUT,
                    _ => EXIT_RUN_FAILED,
                });
            }
        }
    }
    progress.finish();
    if failed > 0 {
        eprintln!("error: {failed} runs failed (see REPORT.md)");
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    ExitCode::SUCCESS
}

fn report_dir(dir: &std::path::Path) -> ExitCode {
    if !dir.join("plan.json").is_file() {
        eprintln!(
            "error: {} is not a results folder (no plan.json); give one written by `alloclab run`, e.g. results/numpy-temporaries",
            dir.display()
        );
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let lock = match alloclab::export::results::ResultsDir::open(dir) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let rebuilt = alloclab::export::report_md::rebuild(dir);
    drop(lock);
    match rebuilt {
        Ok(r) => {
            eprintln!(
                "{}: {} of {} runs ok, {} failed; {} plots; REPORT.md rebuilt",
                dir.display(),
                r.ok,
                r.planned,
                r.failed,
                r.plots
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_RUN_FAILED)
        }
    }
}

fn compare(mut plan: ComparePlan) -> ExitCode {
    let total = plan.specs.len();
    let mut progress = |i: usize, spec: &alloclab::spec::RunSpec| {
        eprintln!("[{}/{total}] {spec}", i + 1);
    };
    let outcomes: Vec<Outcome> = driver::run_all(&plan.specs, &mut plan.executor, &mut progress);
    let conflicts = driver::checksum_conflicts(&outcomes);
    if !conflicts.is_empty() {
        for c in &conflicts {
            eprintln!("error: {c}");
        }
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    let rows: Vec<SummaryRow> = outcomes.iter().map(SummaryRow::from_outcome).collect();
    let text = match plan.format {
        Format::Json => report::to_json(&rows) + "\n",
        Format::Csv => report::to_csv(&rows),
        Format::Markdown => report::to_markdown(&rows),
        Format::Table => table_screen(&outcomes, &rows, plan.verbose),
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: writing the results failed: {e}");
            return ExitCode::from(EXIT_RUN_FAILED);
        }
    }
    let failed = rows.iter().filter(|r| r.status != "ok").count();
    if failed > 0 {
        eprintln!("error: {failed} of {total} runs failed (see their rows)");
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    ExitCode::SUCCESS
}

/// The one-screen human view: context, table, explanations, notes.
fn table_screen(outcomes: &[Outcome], rows: &[SummaryRow], verbose: bool) -> String {
    let mut s = String::new();
    if let Some(first) = outcomes.first() {
        let spec = &first.spec;
        s.push_str(&format!(
            "{} · {} elements · seed {}\n",
            spec.workload,
            report::fmt_count(spec.size as f64),
            spec.seed
        ));
    }
    let oks: Vec<_> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    if let Some(r) = oks.first() {
        let mut versions: Vec<String> = Vec::new();
        for r in &oks {
            if !versions.contains(&r.env.allocator_version) {
                versions.push(r.env.allocator_version.clone());
            }
        }
        let e = &r.env;
        s.push_str(&format!(
            "{} · THP {} · {} · {} · {} target-cpu={} ({})\n",
            versions.join(" · "),
            e.thp_enabled,
            e.kernel,
            e.cpu_model,
            e.codegen.profile,
            e.codegen.target_cpu,
            e.codegen.simd_summary()
        ));
        s.push_str(&format!(
            "latency per iteration, measured for at least {} s and {} iterations; harness overhead {:.0} ns/sample (clock pair {:.0} ns)\n\n",
            r.budget.min_time_ns as f64 / 1e9,
            r.budget.min_iters,
            r.overhead.harness_overhead_ns_per_sample,
            r.overhead.timer_overhead_ns
        ));
    }
    s.push_str(&report::to_table(rows));
    let lines = report::explanations(rows);
    if !lines.is_empty() {
        s.push('\n');
        for l in lines {
            s.push_str(&l);
            s.push('\n');
        }
    }
    if verbose {
        s.push_str("\nallocator statistics at the end of the measured phase (bytes) and knobs as the allocator reports them:\n");
        for o in outcomes {
            let Ok(r) = &o.result else { continue };
            let stats: Vec<String> = r
                .allocator_stats
                .iter()
                .map(|(k, v)| format!("{k} {}", report::fmt_count(*v as f64)))
                .collect();
            let knobs: Vec<String> = r
                .knobs_effective
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            s.push_str(&format!(
                "  {} {}: {}{}{}\n",
                o.spec.allocator_label(),
                o.spec.variant,
                if stats.is_empty() {
                    "no statistics".to_string()
                } else {
                    stats.join(", ")
                },
                if knobs.is_empty() {
                    String::new()
                } else {
                    format!("; knobs {}", knobs.join(", "))
                },
                match r.thp_disabled {
                    Some(true) => "; THP disabled",
                    _ => "",
                }
            ));
        }
    }
    let notes = report::unavailable_notes(outcomes);
    if !notes.is_empty() {
        s.push('\n');
        for n in notes {
            s.push_str(&format!("note: {n}\n"));
        }
    }
    s
}

/// Progress of `alloclab exec` on stderr: one line per run (redrawn on a terminal).
struct ExecProgress {
    total: usize,
    done: usize,
    tty: bool,
    started: std::time::Instant,
}

impl alloclab::exec::Observer for ExecProgress {
    fn session_started(&mut self, total_runs: usize) {
        self.total = total_runs;
    }

    fn run_started(&mut self, label: &str, what: &str) {
        if self.tty {
            eprint!(
                "\r\x1b[K[{}/{}] {label} {what} … ({:.0} s)",
                self.done + 1,
                self.total,
                self.started.elapsed().as_secs_f64()
            );
        } else {
            eprint!("[{}/{}] {label} {what}: ", self.done + 1, self.total);
        }
    }

    fn run_finished(&mut self, _label: &str, run: Result<&alloclab::exec::launch::ChildRun, &str>) {
        self.done += 1;
        let text = match run {
            Ok(r) if r.termination.success() => report::fmt_ns(r.wall_ns as f64),
            Ok(r) => r.termination.describe(None),
            Err(e) => format!("failed: {e}"),
        };
        if !self.tty {
            eprintln!("{text}");
        } else if !run.is_ok_and(|r| r.termination.success()) {
            eprintln!("\r\x1b[K{text}");
        }
    }

    fn say(&mut self, msg: &str) {
        if self.tty {
            eprint!("\r\x1b[K");
        }
        eprintln!("{msg}");
    }
}

/// Takes `dir` for this exec's results: created if missing, locked against a second
/// writer, refused when it holds results of another kind.
fn exec_out_dir(dir: &std::path::Path) -> Result<std::fs::File, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for foreign in ["plan.json", "runs"] {
        if dir.join(foreign).exists() {
            return Err(format!(
                "{} holds results of `alloclab run` ({foreign}); give exec a folder of its own",
                dir.display()
            ));
        }
    }
    let lock = std::fs::File::create(dir.join(".lock"))
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    use std::os::fd::AsRawFd;
    // SAFETY: flock on an open descriptor.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(format!(
            "{} is in use by another alloclab (its .lock is held)",
            dir.display()
        ));
    }
    Ok(lock)
}

fn exec(args: &alloclab::cli::ExecArgs) -> ExitCode {
    use alloclab::exec::{self, output};
    let settings = match args.settings() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let _lock = match args.out.as_deref().map(exec_out_dir).transpose() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    runner::stop_on_interrupt();
    let mut progress = ExecProgress {
        total: 0,
        done: 0,
        tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        started: std::time::Instant::now(),
    };
    let out = args.out.clone();
    let mut save = |record: &exec::ExecRecord| match &out {
        Some(dir) => output::save(dir, record),
        None => Ok(()),
    };
    let record = match exec::run_session(&settings, &mut progress, &mut save) {
        Ok(r) => r,
        Err(e) => {
            if progress.tty {
                eprint!("\r\x1b[K");
            }
            eprintln!("error: {e}");
            return ExitCode::from(match e {
                exec::SessionError::BadInput(_) => EXIT_BAD_INPUT,
                exec::SessionError::Save(_) => EXIT_RUN_FAILED,
            });
        }
    };
    if progress.tty {
        eprint!("\r\x1b[K");
    }
    let rows = output::rows(&record);
    let text = match args.format {
        Format::Json => output::to_json(&rows) + "\n",
        Format::Csv => output::to_csv(&rows),
        Format::Markdown => output::to_markdown(&rows),
        Format::Table => {
            let mut s = output::header(&record);
            s.push('\n');
            s.push_str(&output::to_table(&rows));
            let lines = output::explanations(&rows);
            if !lines.is_empty() {
                s.push('\n');
                for l in lines {
                    s.push_str(&l);
                    s.push('\n');
                }
            }
            s
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush())
    {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: writing the results failed: {e}");
            return ExitCode::from(EXIT_RUN_FAILED);
        }
    }
    if let Some(dir) = &args.out {
        eprintln!("results in {}", dir.display());
    }
    if !record.complete {
        eprintln!("interrupted: the finished runs are kept");
        return ExitCode::from(130);
    }
    let failed = rows.iter().filter(|r| r.status != "ok").count();
    if failed > 0 {
        eprintln!(
            "error: {failed} of {} allocators failed (see their rows)",
            rows.len()
        );
        return ExitCode::from(EXIT_RUN_FAILED);
    }
    ExitCode::SUCCESS
}
