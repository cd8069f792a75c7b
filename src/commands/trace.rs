//! `alloclab trace`: why and when. One built-in cell under each allocator: untraced
//! processes in interleaved rounds (the reference the traced run is stated against),
//! then one traced run per allocator whose every iteration is kept (latency, faults, RSS,
//! heap top) and, where perf works, whose faults and memory syscalls come with their
//! call stacks: a timeline, folded stacks, flame graphs and one mechanism line each.

use crate::analysis::stats::{median, median_ci};
use crate::analysis::trace::{self as analysis, EventKind};
use crate::cli::TraceArgs;
use crate::engine::{self, preflight, trace, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::folder::Kind;
use crate::export::trace::{
    self as export, AllocatorTrace, CellRun, CommandRun, Overhead, Subject, TraceReport, TracedRun,
    Untraced,
};
use crate::model::budget::Budget;
use crate::model::run::WorkerRequest;
use crate::ui::interrupt::interrupted;
use crate::ui::progress::Progress;
use std::time::Duration;

pub fn run(args: &TraceArgs, level: f64) -> Result<()> {
    if !args.command.is_empty() {
        return run_command(args, level);
    }
    let specs = args.specs()?;
    differential_fits(specs.iter().map(|s| s.allocator_label()))?;
    preflight::refuse_idle_knobs(&specs).map_err(Error::BadInput)?;
    let workers = preflight::check(&specs).map_err(Error::bad)?;
    let mut executor = ProcessExecutor::new(
        workers,
        crate::counters::CounterMode::Auto,
        Duration::from_secs_f64(args.timeout),
    )
    .map_err(|why| Error::counters(crate::counters::CounterMode::Auto, why))?;
    executor.timeout_hint = "raise --timeout or lower --iterations/--size".into();
    let folder = super::exec::take_out_dir(&args.out, Kind::Trace, args.force_out)?;
    engine::begin();
    let (sampling, ptrace_ok) = cell_sampling(args);
    let order_seed = args.order_seed.unwrap_or_else(engine::clock_seed);

    // The untraced reference: compare's budget, interleaved rounds.
    // Per allocator: its untraced processes, its traced run, its evidence run.
    let mut progress = Progress::new(specs.len() * (args.processes as usize + 2));
    let cells = if args.processes > 0 {
        let (cells, cut) = engine::run_rounds_within(
            &specs,
            // compare's default budget: 0.07 s measured after 0.02 s of warm-up.
            &Budget::compare(),
            args.processes,
            args.max_time,
            order_seed,
            &mut executor,
            &mut progress,
            level,
        );
        if let Some(ran) = cut {
            progress.shorten(specs.len() * (args.processes - ran) as usize);
            progress.say(&format!(
                "--max-time {} s left no room for untraced round {} of {}: {ran} untraced processes per allocator",
                crate::fmt::trim_float(args.max_time),
                ran + 1,
                args.processes
            ));
        }
        cells
    } else {
        Vec::new()
    };

    let cell = CellTracing {
        args,
        executor: &executor,
        sampling: &sampling,
        ptrace_ok,
        folder: &folder,
        level,
    };
    let mut traces: Vec<AllocatorTrace> = Vec::new();
    for spec in &specs {
        if interrupted() {
            break;
        }
        let untraced: Vec<f64> = cells
            .iter()
            .find(|c| c.spec == *spec)
            .map(|c| c.records().map(|(_, r)| r.p50_ns as f64).collect())
            .unwrap_or_default();
        match cell.allocator(spec, &untraced, &mut progress)? {
            Some(mut t) => {
                if let (Some(c), TracedRun::Cell(run)) =
                    (cells.iter().find(|c| c.spec == *spec), &mut t.run)
                {
                    let row = crate::analysis::cells::row(c);
                    run.untraced_memory = row.memory;
                    run.untraced_memory_ci = row.memory_ci;
                }
                traces.push(t)
            }
            None => break,
        }
    }
    progress.clear();
    let complete = !interrupted() && traces.len() == specs.len();
    let report = cell_report(args, &sampling, ptrace_ok, order_seed, complete, traces);
    let written = export::save(&folder, &report, export::UntracedRuns::Cells(&cells))
        .map_err(Error::failed)?;
    let failed = report.allocators.iter().map(|t| t.failure.is_some());
    let console = export::console(&report, &args.out, &written);
    conclude(folder, complete, &console, failed, specs.len(), &args.out)
}

/// Refuses, before anything runs, a first two allocators (`labels`, as the traces name
/// them) whose differential flame graphs would get a file name too long
/// (`flamegraphs/diff/A-vs-B.syscalls.svg`): each label fits alone, the two joined may
/// not, and the save at the end would fail.
fn differential_fits(labels: impl Iterator<Item = String>) -> Result<()> {
    let labels: Vec<String> = labels.take(2).collect();
    let [a, b] = &labels[..] else {
        return Ok(());
    };
    let stem = crate::model::spec::pair_stem(a, b);
    let max = crate::model::spec::MAX_STEM_BYTES;
    if stem.len() > max {
        let short = |l: &str| match l.char_indices().nth(30) {
            Some((i, _)) => format!("'{}…'", &l[..i]),
            None => format!("'{l}'"),
        };
        return Err(Error::BadInput(format!(
            "--allocators: the first two, {} and {}, name their differential flame graphs together ({} bytes as a file name), and at most {max} leave room for what the lab adds within the {} bytes a file name may have: give them names of at most {} bytes together, or put an allocator with a shorter name first",
            short(a),
            short(b),
            stem.len(),
            crate::model::spec::NAME_MAX,
            max - "-vs-".len()
        )));
    }
    Ok(())
}

/// perf's sampling of a built-in cell (Err: why not, said), and whether the ptrace
/// tracer can time the memory syscalls without it (not on every machine).
fn cell_sampling(args: &TraceArgs) -> (std::result::Result<trace::Sampling, String>, bool) {
    let sampling = trace::perf_tool().map(|perf| trace::Sampling {
        perf,
        fault_period: args.fault_period,
        stack_bytes: args.stack_bytes,
    });
    let ptrace_ok = crate::counters::linux::ptrace::unsupported().is_none();
    if let Err(why) = &sampling {
        crate::fmt::say!(
            "note: no call stacks: {why}; the timeline is measured without them{}",
            if ptrace_ok {
                " (memory syscalls timed by the ptrace tracer)"
            } else {
                ""
            }
        );
    }
    (sampling, ptrace_ok)
}

/// The trace of a built-in cell as trace.json keeps it.
fn cell_report(
    args: &TraceArgs,
    sampling: &std::result::Result<trace::Sampling, String>,
    ptrace_ok: bool,
    order_seed: u64,
    complete: bool,
    traces: Vec<AllocatorTrace>,
) -> TraceReport {
    TraceReport {
        schema: export::SCHEMA.into(),
        subject: Subject::Cell {
            workload: args.workload,
            variant: args.variant,
            size: args.size,
            iterations: args.iterations,
            processes: args.processes,
            attribution: match sampling {
                Ok(_) => None,
                Err(why) => Some(why.clone()),
            },
        },
        fault_period: args.fault_period,
        syscalls_timed_by: match (sampling, ptrace_ok) {
            (Ok(_), _) => Some("perf".into()),
            (Err(_), true) => Some("ptrace".into()),
            (Err(_), false) => None,
        },
        order_seed,
        complete,
        allocators: traces,
    }
}

/// perf's file of `label`'s traced run in the folder: removed on every way out of here
/// unless `keep` (--keep-perf-data).
fn perf_data<'f>(
    folder: &'f crate::export::folder::Folder,
    label: &str,
    keep: bool,
) -> Result<crate::export::folder::Claimed<'f>> {
    folder
        .claim_for_writer(&format!("perf/{}.data", export::file_stem(label)), keep)
        .map_err(Error::failed)
}

/// A worker's traced run, or why it failed.
type WorkerTraced = std::result::Result<trace::Traced, crate::model::record::RunFailure>;

/// How each allocator's worker is traced: under perf (its samples checked against the
/// worker's own counts), or with the ptrace tracer timing the memory syscalls, or with
/// neither (the timeline only).
struct CellTracing<'a> {
    args: &'a TraceArgs,
    executor: &'a ProcessExecutor,
    sampling: &'a std::result::Result<trace::Sampling, String>,
    ptrace_ok: bool,
    folder: &'a crate::export::folder::Folder,
    /// The confidence level of the untraced median's interval.
    level: f64,
}

impl CellTracing<'_> {
    /// One allocator's traced worker, read into its trace (a failed one says why); None
    /// when Ctrl-C stopped it, so that it was not traced.
    fn allocator(
        &self,
        spec: &crate::model::run::RunSpec,
        untraced: &[f64],
        progress: &mut Progress,
    ) -> Result<Option<AllocatorTrace>> {
        let args = self.args;
        let label = spec.allocator_label();
        // Under perf the worker counts its memory syscalls itself too (tracepoint
        // counters, independent of perf's samples): the samples are checked against them.
        let request = WorkerRequest {
            spec: spec.clone(),
            budget: Budget::exactly(args.warmup_iters, args.iterations),
            counters: match (self.sampling, self.ptrace_ok) {
                (Ok(_), _) => crate::counters::CounterMode::Perf,
                (Err(_), true) => crate::counters::CounterMode::Ptrace,
                (Err(_), false) => crate::counters::CounterMode::Off,
            },
            timeline: true,
            cpu: None,
            layout: None,
            stall: None,
        };
        progress.start(&format!(
            "{label}: traced run of {} iterations",
            args.iterations
        ));
        let outcome = self.traced(&request, &label)?;
        if interrupted() {
            // Stopped before this allocator's trace was whole: it was not traced.
            progress.finish_with("interrupted", true);
            return Ok(None);
        }
        match &outcome {
            Ok(_) => progress.finish_with("traced", false),
            Err(f) => progress.finish_with(&f.cause, true),
        }
        // What its calls and faults did: one more run of the same iterations, recorded.
        progress.start(&format!("{label}: evidence run"));
        let evidence: crate::model::evidence::Recorded =
            match self.executor.evidence_run(spec, &request.budget) {
                Ok((_, e)) => e.into(),
                Err(f) => crate::model::evidence::Recorded::Unrecorded(f.cause),
            };
        if interrupted() {
            progress.finish_with("interrupted", true);
            return Ok(None);
        }
        match &evidence {
            crate::model::evidence::Recorded::Recorded(_) => {
                progress.finish_with("recorded", false)
            }
            crate::model::evidence::Recorded::Unrecorded(why) => progress.finish_with(why, true),
        }
        Ok(Some(match outcome {
            Ok(traced) => self.read(spec, &label, traced, untraced, Some(evidence)),
            Err(f) => AllocatorTrace::failed(
                &label,
                spec.allocator,
                f.cause,
                TracedRun::Cell(Box::new(CellRun::new(overhead(&[], untraced, self.level)))),
            ),
        }))
    }

    /// The worker's traced run: under perf record; without perf events, with the
    /// memory syscalls timed by the ptrace tracer (no stacks); else untraced.
    fn traced(&self, request: &WorkerRequest, label: &str) -> Result<WorkerTraced> {
        Ok(match self.sampling {
            Ok(s) => {
                let data = perf_data(self.folder, label, self.args.keep_perf_data)?;
                trace::run(self.executor, request, s, data.path())
            }
            Err(_) if self.ptrace_ok => {
                self.executor
                    .spawn_request_traced(request)
                    .map(|(record, calls)| trace::Traced {
                        record,
                        events: trace::events_of_calls(&calls),
                        skipped_lines: 0,
                        lost: None,
                    })
            }
            Err(_) => self
                .executor
                .spawn_request(request, None)
                .map(|record| trace::Traced {
                    record,
                    events: Vec::new(),
                    skipped_lines: 0,
                    lost: None,
                }),
        })
    }

    /// A traced run's events placed into its iterations, attributed, and said as the
    /// mechanism (where they have times), checked against the worker's own counts.
    fn read(
        &self,
        spec: &crate::model::run::RunSpec,
        label: &str,
        traced: trace::Traced,
        untraced: &[f64],
        evidence: Option<crate::model::evidence::Recorded>,
    ) -> AllocatorTrace {
        let placed = analysis::place(&traced.record.timeline, &traced.events);
        let timed = self.sampling.is_ok() || self.ptrace_ok;
        let attributions = if timed {
            analysis::attribute(&placed, &traced.record.timeline)
        } else {
            Vec::new()
        };
        let mut parts = if timed {
            analysis::mechanism(
                label,
                evidence.as_ref(),
                &attributions,
                &placed.per_iteration,
            )
        } else {
            Vec::new()
        };
        let check = sample_check(&traced.record, &placed);
        // A mechanism drawn from samples that miss some calls says so.
        if let (false, Some((c, true))) = (parts.is_empty(), &check) {
            parts.push(format!("NOT ALL CALLS SAMPLED: {c}"));
        }
        let mechanism = (!parts.is_empty()).then(|| analysis::paragraph(&parts));
        let check = check.map(|(c, _)| c);
        let fold = |kinds: &[EventKind]| analysis::fold(&placed.inside, kinds);
        let traced_ns: Vec<f64> = traced
            .record
            .timeline
            .iter()
            .map(|s| s.elapsed_ns as f64)
            .collect();
        AllocatorTrace {
            label: label.to_string(),
            allocator: spec.allocator,
            failure: None,
            mechanism,
            mechanism_parts: parts,
            attributions,
            faults_folded: fold(&[EventKind::Fault]),
            syscalls_folded: fold(&EventKind::SYSCALLS),
            skipped_lines: traced.skipped_lines,
            lost: traced.lost,
            evidence,
            run: TracedRun::Cell(Box::new(CellRun {
                between: placed.between.clone(),
                per_iteration: placed.per_iteration,
                sample_check: check,
                record: Some(traced.record),
                // The untraced memory is set from the untraced cell by the caller.
                ..CellRun::new(overhead(&traced_ns, untraced, self.level))
            })),
        }
    }
}

/// The end of a trace: the folder marked complete or not, the console summary, and the
/// exit status (130 after Ctrl-C, 1 when a traced run failed); `failed` says, for every
/// allocator traced, whether its run failed.
fn conclude(
    mut folder: crate::export::folder::Folder,
    complete: bool,
    console: &str,
    failed: impl ExactSizeIterator<Item = bool>,
    asked: usize,
    out: &std::path::Path,
) -> Result<()> {
    let ended = failed.len();
    let failed = failed.filter(|f| *f).count();
    // Traced: the allocators whose traced run finished and was read.
    let traced = ended - failed;
    folder.finish(complete).map_err(Error::failed)?;
    super::print_out(console)?;
    if interrupted() {
        return Err(Error::Interrupted(format!(
            "{traced} of {asked} allocators traced{}; {} says incomplete",
            if failed > 0 {
                format!(" ({failed} failed)")
            } else {
                String::new()
            },
            out.display()
        )));
    }
    super::failed_runs(failed, asked, "traced runs")
}

/// The traced run's median iteration against the untraced processes' p50s: the ratio,
/// and its range over the untraced median's interval.
fn overhead(traced_ns: &[f64], untraced_p50s: &[f64], level: f64) -> Overhead {
    let traced = median(traced_ns);
    let untraced = median(untraced_p50s);
    let ci = median_ci(untraced_p50s, level);
    Overhead {
        traced_median_ns: traced,
        untraced_median_ns: untraced,
        untraced_ci_ns: ci.map(|c| (c.low, c.high)),
        untraced_ci_coverage: ci.map(|c| c.coverage),
        untraced_processes: untraced_p50s.len(),
        ratio: traced.zip(untraced).map(|(t, u)| t / u),
        ratio_range: traced.zip(ci).map(|(t, c)| (t / c.high, t / c.low)),
    }
}

/// The memory syscalls perf sampled in the measured phase (inside the iterations and
/// between them) against what the worker's own tracepoint counters counted: equal
/// unless perf lost samples (the flag: some are missing). None where the worker could
/// not count.
fn sample_check(
    record: &crate::model::record::RunRecord,
    placed: &analysis::Placed<'_>,
) -> Option<(String, bool)> {
    let counted = record.totals.syscalls?;
    let counted = counted.brk + counted.mmap + counted.munmap + counted.madvise + counted.mremap;
    let inside: u64 = placed.per_iteration.iter().map(|e| e.syscalls()).sum();
    let between: u64 = placed
        .between
        .iter()
        .filter(|(k, _)| k.is_syscall())
        .map(|(_, n)| *n)
        .sum();
    let sampled = inside + between;
    Some(if sampled == counted && counted == 0 {
        (
            "no memory syscall counted by the worker's own counters, none sampled".to_string(),
            false,
        )
    } else if sampled == counted {
        (
            format!(
                "all {counted} memory syscalls the worker counted were sampled with their stacks"
            ),
            false,
        )
    } else {
        (
            format!(
                "perf sampled {sampled} memory syscalls where the worker counted {counted}: the per-iteration syscall figures and shares are short by {}",
                counted.abs_diff(sampled)
            ),
            true,
        )
    })
}

/// `alloclab trace -- CMD`: the command's untraced runs under each allocator (exec's
/// session, shuffled rounds), then one run per allocator under `perf record`, read into a
/// timeline over time, folded stacks and a mechanism line.
fn run_command(args: &TraceArgs, level: f64) -> Result<()> {
    let settings = command_settings(args, level)?;
    differential_fits(settings.allocators.iter().map(|a| a.to_string()))?;
    let max_records = crate::engine::python::max_records_from_env().map_err(Error::BadInput)?;
    let sampling = sampling(args)?;
    let folder = super::exec::take_out_dir(&args.out, Kind::Trace, args.force_out)?;
    engine::begin();
    let (extra, missing) = perf_events(&sampling);
    // A CPython command: its lines too, where perf records and the interpreter has
    // sys.monitoring (said either way).
    let python = python_plan(args, &settings, sampling.is_ok());
    // The untraced runs: exec's session, saved as they finish.
    let record = if args.runs > 0 {
        let mut progress = super::exec::ExecProgress::session();
        let mut save = |r: &crate::engine::command::ExecRecord| {
            folder.json("untraced.json", r).map_err(|e| e.to_string())
        };
        let r = crate::engine::command::run_session(&settings, &mut progress, &mut save);
        progress.0.clear();
        Some(r?)
    } else {
        None
    };
    let tracing = Tracing::new(args, &settings, &sampling, &extra, &python, &folder);
    // Per allocator: its traced run and its evidence run.
    let mut progress = Progress::new(2 * settings.allocators.len());
    let mut traces = Vec::new();
    for a in &settings.allocators {
        if interrupted() {
            break;
        }
        let untraced = untraced_of(record.as_ref(), &a.to_string());
        match tracing.allocator(a, untraced, max_records, &mut progress)? {
            Some(t) => traces.push(t),
            None => break,
        }
    }
    progress.clear();
    let complete = !interrupted()
        && traces.len() == settings.allocators.len()
        && record.as_ref().is_none_or(|r| r.complete);
    let report = TraceReport {
        schema: export::COMMAND_SCHEMA.into(),
        subject: Subject::Command {
            command: settings
                .command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            python: python.said(args.python_perf_frames),
            missing,
            runs: args.runs,
        },
        fault_period: args.fault_period,
        syscalls_timed_by: Some(if sampling.is_ok() { "perf" } else { "ptrace" }.into()),
        order_seed: settings.order_seed,
        complete,
        allocators: traces,
    };
    let mut written = export::save(
        &folder,
        &report,
        export::UntracedRuns::Command(record.as_ref()),
    )
    .map_err(Error::failed)?;
    if record.is_some() {
        // Written by the session, after every untraced run.
        written.push("untraced.json".into());
    }
    let failed = report.allocators.iter().map(|t| t.failure.is_some());
    let console = export::console(&report, &args.out, &written);
    let asked = settings.allocators.len();
    conclude(folder, complete, &console, failed, asked, &args.out)
}

/// The command as exec runs it (its untraced runs are exec's session).
fn command_settings(args: &TraceArgs, level: f64) -> Result<crate::engine::command::ExecSettings> {
    let allocators = crate::model::knobs::parse_spec_list(&args.allocators).map_err(Error::bad)?;
    super::options::command_settings(
        allocators,
        &args.command,
        super::options::CommandOptions {
            runs: args.runs,
            warmup: if args.runs > 0 { 1 } else { 0 },
            show_output: args.show_output,
            thp: args.thp,
            timeout: Some(args.timeout),
            counters: crate::counters::CounterMode::Auto,
            noise_threshold: crate::model::metric::NOISE_THRESHOLD,
            level,
            order_seed: args.order_seed,
        },
    )
    .map(|settings| crate::engine::command::ExecSettings {
        max_time: Some(std::time::Duration::from_secs_f64(args.max_time)),
        ..settings
    })
    .map_err(Error::BadInput)
}

/// perf gives the stacks, every fault and the RSS over time; without it (Err: why) the
/// ptrace tracer still times every memory syscall (no privileges; not on every machine);
/// with neither the command cannot be traced.
fn sampling(args: &TraceArgs) -> Result<std::result::Result<trace::Sampling, String>> {
    match trace::perf_tool() {
        Ok(perf) => Ok(Ok(trace::Sampling {
            perf,
            fault_period: args.fault_period,
            stack_bytes: args.stack_bytes,
        })),
        Err(why) => match crate::counters::linux::ptrace::unsupported() {
            None => Ok(Err(why)),
            Some(no) => Err(Error::BadInput(format!(
                "tracing a command needs perf ({why}) or the ptrace tracer ({}); `alloclab exec --counters off` still measures the command's time and faults",
                no.0
            ))),
        },
    }
}

/// The perf events a command's recording adds (the user page faults, the RSS), and what
/// is not measured here and why.
fn perf_events(
    sampling: &std::result::Result<trace::Sampling, String>,
) -> (Vec<String>, Vec<String>) {
    let (extra, mut missing): (Vec<String>, Vec<String>) = match sampling {
        Ok(_) => {
            let (ok, no): (Vec<_>, Vec<_>) =
                trace::command_events().into_iter().partition(|r| r.is_ok());
            (
                ok.into_iter().flatten().collect(),
                no.into_iter().filter_map(|r| r.err()).collect(),
            )
        }
        Err(_) => (Vec::new(), Vec::new()),
    };
    if let Err(why) = sampling {
        missing.push(format!(
            "call stacks, every fault over time and the RSS over time need perf events: {why}; the memory syscalls are timed by the ptrace tracer instead (from the launch; pid is the thread's id)"
        ));
    }
    (extra, missing)
}

/// How each allocator's traced run is made: under perf (with the lab's own counters
/// beside it, where they open) or under the ptrace tracer.
struct Tracing<'a> {
    args: &'a TraceArgs,
    settings: &'a crate::engine::command::ExecSettings,
    sampling: &'a std::result::Result<trace::Sampling, String>,
    extra: &'a [String],
    python: &'a PythonPlan,
    folder: &'a crate::export::folder::Folder,
    faults_counted: bool,
    opts: crate::engine::spawn::LaunchOptions,
    recorded: crate::engine::spawn::LaunchOptions,
    /// Beside perf's recording, the lab's own tracepoint counters count the same run
    /// (perf and what it starts, less perf's own thread): an independent count that the
    /// recorded calls are checked against. Err where they cannot be opened.
    beside: std::result::Result<(), String>,
}

impl<'a> Tracing<'a> {
    fn new(
        args: &'a TraceArgs,
        settings: &'a crate::engine::command::ExecSettings,
        sampling: &'a std::result::Result<trace::Sampling, String>,
        extra: &'a [String],
        python: &'a PythonPlan,
        folder: &'a crate::export::folder::Folder,
    ) -> Self {
        let opts = crate::engine::spawn::LaunchOptions {
            show_output: args.show_output,
            thp_never: args.thp == crate::model::spec::Thp::Never,
            timeout: settings.timeout,
            count_syscalls: false,
            launcher_apart: false,
            trace: None,
            capture_stdout: false,
            log: crate::counters::linux::ptrace::Log::Counts,
            record_faults: false,
            // perf is the child here; the command's RSS over time comes from
            // kmem:rss_stat instead.
            memory_every: None,
            // The command may write to ALLOCLAB_MARK_FD as under exec: the pipe is
            // there and drained (a trace has no idle phase), so no write fails or blocks.
            mark: true,
        };
        let beside: std::result::Result<(), String> =
            crate::counters::linux::perf::SyscallCounters::open()
                .map(drop)
                .map_err(|why| why.0);
        let recorded = crate::engine::spawn::LaunchOptions {
            count_syscalls: sampling.is_ok() && beside.is_ok(),
            launcher_apart: true,
            ..opts
        };
        Tracing {
            args,
            settings,
            sampling,
            extra,
            python,
            folder,
            faults_counted: extra.iter().any(|e| e.contains("page_fault_user")),
            opts,
            recorded,
            beside,
        }
    }

    /// One allocator's traced run, read into its trace (a failed one says why); None when
    /// Ctrl-C stopped it, so that it was not traced.
    fn allocator(
        &self,
        a: &crate::model::knobs::AllocatorSpec,
        untraced: Untraced,
        max_records: Option<u64>,
        progress: &mut Progress,
    ) -> Result<Option<AllocatorTrace>> {
        let label = a.to_string();
        progress.start(&format!("{label}: traced run"));
        let mut recorder = match self.python {
            PythonPlan::Lines(_) => Some(crate::engine::python::Recorder::new(
                self.args.python_perf_frames,
                max_records,
            )),
            _ => None,
        };
        let recorder_env = match &recorder {
            Some(Ok(r)) => r.env(),
            _ => Vec::new(),
        };
        let outcome = match self.sampling {
            Ok(s) => self.under_perf(s, a, &label, &recorder_env)?,
            Err(_) => self.under_ptrace(a),
        };
        if interrupted() {
            // Stopped before this allocator's trace was whole: it was not traced.
            progress.finish_with("interrupted", true);
            return Ok(None);
        }
        match &outcome {
            Ok(_) => progress.finish_with("traced", false),
            Err(why) => progress.finish_with(why, true),
        }
        // What its calls and faults did: one more run, recorded.
        progress.start(&format!("{label}: evidence run"));
        let evidence = self.evidence(a);
        if interrupted() {
            progress.finish_with("interrupted", true);
            return Ok(None);
        }
        match &evidence {
            crate::model::evidence::Recorded::Recorded(_) => {
                progress.finish_with("recorded", false)
            }
            crate::model::evidence::Recorded::Unrecorded(why) => progress.finish_with(why, true),
        }
        let t = match outcome {
            Ok(None) => return Ok(None),
            Ok(Some((script, lost, counted))) => {
                match analysis::run_timeline(&script, self.faults_counted, 200) {
                    Some(tl) => {
                        let check = analysis::count_check(&tl.totals, counted);
                        let py = match (&mut recorder, self.python) {
                            (Some(r), PythonPlan::Lines(i)) => {
                                Some(python_view(r, &script, &tl, self.faults_counted, &i.stdlib))
                            }
                            _ => None,
                        };
                        let mut t = command_trace(
                            &label,
                            a.allocator,
                            tl,
                            &script,
                            (lost, check),
                            untraced,
                            evidence,
                        );
                        if let TracedRun::Command(c) = &mut t.run {
                            c.python = py;
                        }
                        t
                    }
                    None => AllocatorTrace::failed(
                        &label,
                        a.allocator,
                        "perf recorded no exec of the command".into(),
                        TracedRun::Command(Box::new(CommandRun::new(untraced))),
                    ),
                }
            }
            Err(why) => AllocatorTrace::failed(
                &label,
                a.allocator,
                why,
                TracedRun::Command(Box::new(CommandRun::new(untraced))),
            ),
        };
        Ok(Some(t))
    }

    /// The evidence run of the command under `a`: what its calls and faults did.
    fn evidence(&self, a: &crate::model::knobs::AllocatorSpec) -> crate::model::evidence::Recorded {
        crate::engine::command::evidence_of(
            a,
            self.settings,
            &self.settings.program,
            &self.settings.command,
        )
    }

    /// The traced run under perf record, read back with perf script, with the lab's own
    /// count of the run beside it.
    fn under_perf(
        &self,
        s: &trace::Sampling,
        a: &crate::model::knobs::AllocatorSpec,
        label: &str,
        recorder_env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Result<Traced> {
        let data = perf_data(self.folder, label, self.args.keep_perf_data)?;
        let wrapper = trace::record_argv(s, data.path(), self.extra);
        Ok(trace_one(
            self.settings,
            a,
            Some(&wrapper),
            &self.recorded,
            recorder_env,
        )
        .and_then(|run| {
            run.map(|r| {
                let counted = match &self.beside {
                    Ok(()) => r.syscalls.map_err(|u| u.0),
                    Err(why) => Err(why.clone()),
                };
                trace::read_script(s, data.path(), true)
                    .map(|(script, lost)| (script, lost, counted))
                    .map_err(|f| f.cause)
            })
            .transpose()
        }))
    }

    /// The traced run under the ptrace tracer: its logged calls as a script.
    fn under_ptrace(&self, a: &crate::model::knobs::AllocatorSpec) -> Traced {
        let traced = crate::engine::spawn::LaunchOptions {
            trace: Some(crate::counters::linux::ptrace::Scope::Tree),
            log: crate::counters::linux::ptrace::Log::Calls,
            record_faults: false,
            ..self.opts
        };
        let t0 = crate::counters::linux::ptrace::monotonic_ns();
        trace_one(self.settings, a, None, &traced, &[]).map(|run| {
            run.map(|r| {
                let only = "the ptrace tracer's count is the only one of a run traced without perf";
                (
                    ptrace_script(self.settings, t0, &r),
                    None,
                    Err(only.to_string()),
                )
            })
        })
    }
}

/// A traced run read back: its script, perf's word on lost samples, and the independent
/// count of its memory syscalls (Err: why there is none); Ok(None) when Ctrl-C stopped it.
type Traced = std::result::Result<
    Option<(
        analysis::Script,
        Option<String>,
        std::result::Result<crate::model::counts::SyscallCounts, String>,
    )>,
    String,
>;

/// One traced run of the command under `a` (started by `wrapper` where given, perf's
/// argument vector): Ok(None) when Ctrl-C stopped it; Err with why it failed — perf's own
/// failure as perf's, the command's with the end of the stderr it shares with perf.
fn trace_one(
    settings: &crate::engine::command::ExecSettings,
    a: &crate::model::knobs::AllocatorSpec,
    wrapper: Option<&[std::ffi::OsString]>,
    opts: &crate::engine::spawn::LaunchOptions,
    extra_env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> std::result::Result<Option<crate::engine::spawn::ChildRun>, String> {
    use crate::engine::spawn::Termination;
    let (row, prepared) = crate::engine::command::prepare_wrapped(
        a,
        settings,
        &settings.program,
        &settings.command,
        wrapper,
        extra_env,
    );
    let Some(prepared) = prepared else {
        return Err(row
            .failure
            .unwrap_or_else(|| "could not be prepared".into()));
    };
    let run = crate::engine::spawn::run(&prepared, opts).map_err(|e| e.to_string())?;
    if run.termination == Termination::Interrupted {
        return Ok(None);
    }
    if !run.termination.success() {
        let code = match run.termination {
            Termination::Exited { code } => Some(code),
            _ => None,
        };
        if wrapper.is_some() {
            if let Some(why) = trace::perf_failure(code, run.stderr_tail.as_deref().unwrap_or("")) {
                return Err(why);
            }
        }
        let tail = run
            .stderr_tail
            .as_deref()
            .and_then(trace::last_meaningful_line)
            .map(|l| format!("; its stderr ended with: {l}"))
            .unwrap_or_default();
        return Err(format!(
            "the traced command {}{tail}",
            run.termination.describe(settings.timeout)
        ));
    }
    Ok(Some(run))
}

/// A run under the ptrace tracer as a script: its memory syscalls (no stacks), from the
/// launch at `t0` to the reaping; the command's process taken to be the thread of its
/// first call.
fn ptrace_script(
    settings: &crate::engine::command::ExecSettings,
    t0: u64,
    run: &crate::engine::spawn::ChildRun,
) -> analysis::Script {
    let pid = run.calls.first().map_or(0, |c| c.tid as u32);
    let comm = settings
        .program
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    analysis::Script {
        events: trace::events_of_calls(&run.calls),
        tasks: vec![
            analysis::Task::Exec {
                time_ns: t0,
                pid,
                comm,
            },
            // The run's wall time starts after the fork, later than t0: the end is
            // the later of the two, so that no call at exit falls outside.
            analysis::Task::Exit {
                time_ns: run
                    .calls
                    .iter()
                    .map(|c| c.time_ns)
                    .fold(t0 + run.wall_ns, u64::max),
                pid,
            },
        ],
        skipped: 0,
    }
}

/// The untraced runs of `label` in exec's record: median wall time with its interval,
/// median faults and memory syscalls.
fn untraced_of(record: Option<&crate::engine::command::ExecRecord>, label: &str) -> Untraced {
    let Some(row) = record.and_then(|r| r.allocators.iter().find(|a| a.allocator == label)) else {
        return Untraced::default();
    };
    let level = record.map_or(crate::analysis::stats::DEFAULT_LEVEL, |r| r.confidence);
    let walls: Vec<f64> = row.runs.iter().map(|r| r.wall_ns as f64).collect();
    let syscalls: Vec<f64> = row
        .runs
        .iter()
        .filter_map(|r| r.syscalls)
        .map(|c| (c.brk + c.mmap + c.munmap + c.madvise + c.mremap) as f64)
        .collect();
    let ci = median_ci(&walls, level);
    let (behaviours, memory, memory_ci) = record
        .map(crate::analysis::command::rows)
        .and_then(|rows| rows.into_iter().find(|r| r.allocator == label))
        .map(|r| (r.behaviours, r.memory, r.memory_ci))
        .unwrap_or_default();
    Untraced {
        memory,
        memory_ci,
        behaviours,
        runs: walls.len(),
        wall_median_ns: median(&walls),
        wall_ci_ns: ci.map(|c| (c.low, c.high)),
        wall_ci_coverage: ci.map(|c| c.coverage),
        medians: export::Medians(crate::analysis::command::medians(row, false)),
        syscalls_median: (syscalls.len() == walls.len())
            .then(|| median(&syscalls))
            .flatten(),
    }
}

/// One allocator's trace of the command from its timeline.
fn command_trace(
    label: &str,
    allocator: crate::model::spec::Allocator,
    tl: analysis::RunTimeline<'_>,
    script: &analysis::Script,
    (lost, check): (Option<String>, analysis::CountCheck),
    untraced: Untraced,
    evidence: crate::model::evidence::Recorded,
) -> AllocatorTrace {
    let attributions = analysis::attribute_among(&tl.inside, 1.0, tl.faults.map(|f| f as f64));
    let mut parts = analysis::run_mechanism(label, Some(&evidence), &attributions, &tl.totals);
    if let Some(note) = not_unwound(&tl, &attributions) {
        parts.push(note);
    }
    let mechanism = analysis::paragraph(&parts);
    let duration = tl.end_ns.saturating_sub(tl.start_ns);
    let syscall_rows = syscall_rows(&tl);
    let ratio = untraced.wall_median_ns.map(|m| duration as f64 / m);
    let ratio_range = untraced
        .wall_ci_ns
        .map(|(lo, hi)| (duration as f64 / hi, duration as f64 / lo));
    AllocatorTrace {
        label: label.to_string(),
        allocator,
        failure: None,
        mechanism: Some(mechanism),
        mechanism_parts: parts,
        skipped_lines: script.skipped,
        lost,
        evidence: Some(evidence),
        faults_folded: analysis::fold(&tl.inside, &[EventKind::Fault]),
        syscalls_folded: analysis::fold(&tl.inside, &EventKind::SYSCALLS),
        attributions,
        run: TracedRun::Command(Box::new(CommandRun {
            pid: tl.pid,
            comm: tl.comm.clone(),
            duration_ns: tl.exited.then_some(duration),
            processes: tl.processes,
            faults: tl.faults,
            syscalls: tl.totals.clone(),
            peak_rss_bytes: tl.peak_rss_bytes,
            bin_ns: tl.bin_ns,
            untraced,
            ratio,
            ratio_range,
            count_check: check,
            python: None,
            bins: tl.bins,
            syscall_rows,
        })),
    }
}

/// Where perf unwound poorly (a process that exec'd several programs in turn, a wrapper
/// script first) and a kind of call lost its stacks: said, with what would help.
fn not_unwound(
    tl: &analysis::RunTimeline<'_>,
    attributions: &[analysis::Attribution],
) -> Option<String> {
    let syscalls: Vec<&&analysis::Event> =
        tl.inside.iter().filter(|e| e.kind.is_syscall()).collect();
    let not_unwound = syscalls
        .iter()
        .filter(|e| analysis::cause(e).starts_with('['))
        .count();
    let a_kind_lost = attributions.iter().any(|a| {
        a.kind.is_syscall()
            && a.causes
                .first()
                .is_some_and(|c| c.chain.starts_with("[not unwound"))
    });
    (tl.programs.len() > 1 && a_kind_lost).then(|| {
        format!(
            "NOT UNWOUND: {not_unwound} of {} memory syscalls have no stack past the call; the command's process ran {} programs in turn ({}), and perf does not unwind well across repeated execs of one process: trace the last program directly (by its full path: for pyenv, `$(pyenv which {})`)",
            syscalls.len(),
            tl.programs.len(),
            if tl.programs.len() > 4 {
                format!(
                    "{} → {} → … → {}",
                    tl.programs[0],
                    tl.programs[1],
                    tl.programs[tl.programs.len() - 1]
                )
            } else {
                tl.programs.join(" → ")
            },
            tl.programs.last().map_or("", String::as_str)
        )
    })
}

/// The command's memory syscalls as events/<allocator>.csv rows (time from its start in
/// ms, pid, call, bytes, advice, cause).
fn syscall_rows(tl: &analysis::RunTimeline<'_>) -> Vec<String> {
    tl.inside
        .iter()
        .filter(|e| e.kind.is_syscall())
        .map(|e| {
            format!(
                "{:.6},{},{},{},{},{}",
                (e.time_ns - tl.start_ns) as f64 / 1e6,
                e.pid,
                e.kind.name(),
                e.arg.map_or(String::new(), |v| v.to_string()),
                e.advice.map_or(String::new(), |v| v.to_string()),
                crate::export::csv::field(&analysis::cause(e))
            )
        })
        .collect()
}

/// What a traced command gets of the Python view.
enum PythonPlan {
    /// Not a Python program (or not asked).
    None,
    /// A CPython program whose lines are recorded.
    Lines(crate::engine::python::Interpreter),
    /// A Python program whose lines cannot be: why.
    Cannot(String),
}

impl PythonPlan {
    /// What the report says of it.
    fn said(&self, perf_frames: bool) -> Option<String> {
        match self {
            PythonPlan::None => None,
            PythonPlan::Lines(i) => Some(format!(
                "CPython {} ({}): run with the lab's line recorder (sys.monitoring, a sitecustomize put first on PYTHONPATH; the script is not edited){}; each fault and memory syscall is given the Python stack its thread was at when it happened (last line started before it on the same thread, CLOCK_MONOTONIC on both sides). Not seen: threads that never ran Python, the interpreter's start-up before the recorder and its shutdown after the last exit handler. The recorder costs about 2 µs per line and call, in the traced run only",
                i.version,
                i.path.display(),
                if perf_frames {
                    " and its perf support (PYTHONPERFSUPPORT=1: perf's own Python frames check the join)"
                } else {
                    ""
                }
            )),
            PythonPlan::Cannot(why) => Some(format!("no Python lines: {why}; the native attribution stands")),
        }
    }
}

fn python_plan(
    args: &TraceArgs,
    settings: &crate::engine::command::ExecSettings,
    perf: bool,
) -> PythonPlan {
    if args.no_python {
        return PythonPlan::None;
    }
    match crate::engine::python::detect(&settings.program, &settings.command) {
        Ok(None) => PythonPlan::None,
        Err(why) => PythonPlan::Cannot(why),
        Ok(Some(i)) if !i.lines => PythonPlan::Cannot(format!(
            "CPython {} ({}) has no sys.monitoring (3.12 or newer has; pyenv install 3.12)",
            i.version,
            i.path.display()
        )),
        Ok(Some(i)) if !perf => PythonPlan::Cannot(format!(
            "CPython {} is joined to perf's samples, and perf events are not available here",
            i.version
        )),
        Ok(Some(i)) => PythonPlan::Lines(i),
    }
}

/// The Python view of a traced run from the recorder's files (the perf map files of the
/// run's processes removed with the recorder, now that perf script has read them).
fn python_view(
    recorder: &mut std::result::Result<crate::engine::python::Recorder, String>,
    script: &analysis::Script,
    tl: &analysis::RunTimeline<'_>,
    exact_faults: bool,
    stdlib: &[String],
) -> std::result::Result<crate::analysis::python::PythonView, String> {
    let r = recorder.as_mut().map_err(|why| why.clone())?;
    let mut pids: Vec<u32> = script.events.iter().map(|e| e.pid).collect();
    pids.extend(script.tasks.iter().map(|t| match t {
        analysis::Task::Exec { pid, .. } | analysis::Task::Exit { pid, .. } => *pid,
    }));
    pids.sort_unstable();
    pids.dedup();
    r.forget_maps_of(pids);
    let rec = crate::analysis::python::read_dir(&r.lines())?;
    if rec.processes.is_empty() {
        if !rec.notes.is_empty() {
            // The recorder said why it could not record (the program ran untouched).
            let said: Vec<String> = rec
                .notes
                .iter()
                .map(|(pid, _, why)| format!("process {pid}: {why}"))
                .collect();
            return Err(format!(
                "the line recorder did not record: {}",
                said.join("; ")
            ));
        }
        return Err("the interpreter recorded nothing (run with -I, -E or -S, PYTHONPATH ignored, or no Python code ran)".into());
    }
    let events: Vec<&analysis::Event> = script
        .events
        .iter()
        .filter(|e| e.time_ns >= tl.start_ns && e.time_ns <= tl.end_ns)
        .filter(|e| {
            e.kind.is_syscall() || matches!(e.kind, EventKind::Fault | EventKind::UserFault)
        })
        .collect();
    Ok(crate::analysis::python::view(
        &rec,
        &events,
        exact_faults,
        stdlib,
        (tl.start_ns, tl.bin_ns, tl.bins.len()),
    ))
}
