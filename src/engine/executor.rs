//! Workers of built-in cells: one worker process per run through the one spawn path, and
//! turning whatever the worker did (JSON, crash, signal, garbage) into an outcome.

use super::schedule::{Next, Order, Pass, Rounds, Schedule};
use super::spawn;
use crate::analysis::cliff::{CliffError, Metric, Probe};
use crate::counters::linux::perf::{SyscallCounters, SyscallCounts};
use crate::counters::linux::ptrace;
use crate::counters::{CounterMode, CounterPlan, Unavailable};
use crate::model::budget::Budget;
use crate::model::evidence::Recorded;
use crate::model::layout::{LayoutDraw, LayoutMode};
use crate::model::record::{Cell, Outcome, RunFailure, RunRecord};
use crate::model::run::RunSpec;
use crate::model::run::WorkerRequest;
use crate::ui::interrupt::interrupted;
use crate::ui::progress::Progress;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Runs one spec and returns its record; a real one spawns a worker, tests use mocks.
pub trait Executor {
    /// Measures `spec` under `budget`: its record, or why the run produced none.
    fn execute(&mut self, spec: &RunSpec, budget: &Budget) -> Result<RunRecord, RunFailure>;

    /// How many runs [`Executor::execute_together`] runs at once (`--jobs`); 1 by default.
    fn jobs(&self) -> usize {
        1
    }

    /// Measures up to [`Executor::jobs`] specs at once, their results in their order; one
    /// after another by default.
    fn execute_together(
        &mut self,
        specs: &[&RunSpec],
        budget: &Budget,
    ) -> Vec<Result<RunRecord, RunFailure>> {
        specs.iter().map(|s| self.execute(s, budget)).collect()
    }

    /// What `spec`'s memory syscalls and faults did, from one more process recorded with
    /// their arguments ([`crate::engine::evidence`]), or why there is no recording.
    fn evidence(&mut self, _spec: &RunSpec, _budget: &Budget) -> Recorded {
        Recorded::Unrecorded("this executor records no evidence".into())
    }

    /// Sets whether each process draws its layout, and returns the mode it replaces
    /// (an executor that draws none keeps none). A cliff holds it fixed: where glibc's
    /// top pad puts the cliff is counted from where the heap starts, so its bisection,
    /// its sides and their evidence compare like with like.
    fn set_layout(&mut self, mode: LayoutMode) -> LayoutMode {
        mode
    }
}

/// Spawns `alloclab-<allocator>` from a directory, one process per run.
pub struct ProcessExecutor {
    /// The directory that holds the worker binaries (`alloclab-<allocator>`).
    pub dir: PathBuf,
    /// How the workers' syscalls are counted, as [`ProcessExecutor::new`] resolved it (ptrace:
    /// a second, traced pass of every run).
    pub counters: CounterMode,
    /// How long one worker process may take before it is killed.
    pub timeout: Duration,
    /// What a timed-out run's row tells the user to change, in the options of the
    /// command that runs it ("raise --timeout or lower --min-time/--size"; `run`'s names
    /// an experiment's idle time too).
    pub timeout_hint: std::borrow::Cow<'static, str>,
    /// Disabled tracepoint counters held by the driver itself. The kernel unregisters a
    /// tracepoint's perf probe — waiting for an RCU grace period, ~35 ms per tracepoint
    /// here — only when its last event closes; while the driver holds one, a worker's exit
    /// does not pay that (≈ 0.2 s per run). They count nothing: they are never enabled.
    _keepalive: Option<SyscallCounters>,
    /// The same for the workers' huge-page fault tracepoint (`kmem:mm_page_alloc`), held
    /// whatever `--counters` says: every worker counts its huge-page faults with it.
    _huge_keepalive: Option<crate::counters::hugefaults::HugeFaultCounter>,
    /// The CPU every worker keeps its threads on (`--cpu`); None lets the kernel place
    /// them.
    pub cpu: Option<u32>,
    /// With `--jobs N` (N > 1): the CPUs of the N workers that run at once, one each;
    /// empty runs one worker at a time.
    pub jobs: Vec<u32>,
    /// Whether every worker draws its own layout ([`crate::model::layout`]).
    pub layout: LayoutMode,
    /// The state of the layout draws (splitmix64, advanced atomically: `--jobs` draws
    /// from several threads); seeded from the clock, each draw kept in its record.
    layout_state: std::sync::atomic::AtomicU64,
}

impl ProcessExecutor {
    /// `counters` resolved by [`crate::counters::resolve`]: perf where the driver can
    /// open the tracepoint counters (workers run as the same user), else ptrace where that
    /// is supported. With neither, workers still ask perf, so that each record says why
    /// it has no counts. `Err`: a method asked for by name cannot work here.
    pub fn new(
        dir: PathBuf,
        counters: CounterMode,
        timeout: Duration,
    ) -> Result<Self, Unavailable> {
        let (counters, keepalive) = match crate::counters::resolve(counters)? {
            CounterPlan::Perf(c) => (CounterMode::Perf, Some(c)),
            CounterPlan::Ptrace => (CounterMode::Ptrace, None),
            CounterPlan::Unavailable(_) if counters == CounterMode::Off => (CounterMode::Off, None),
            CounterPlan::Unavailable(_) => (CounterMode::Perf, None),
        };
        Ok(ProcessExecutor {
            timeout_hint: "raise --timeout or lower --min-time/--size".into(),
            dir,
            counters,
            timeout,
            _keepalive: keepalive,
            _huge_keepalive: crate::counters::hugefaults::HugeFaultCounter::open().ok(),
            cpu: None,
            jobs: Vec::new(),
            layout: LayoutMode::Random,
            layout_state: std::sync::atomic::AtomicU64::new(clock_seed() ^ LAYOUT_STREAM),
        })
    }
}

/// The name of a common fatal signal ("SIGSEGV", …), or "signal" for any other number.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGINT => "SIGINT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGTERM => "SIGTERM",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGHUP => "SIGHUP",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGXCPU => "SIGXCPU",
        _ => "signal",
    }
}

/// The last line of a worker's stderr that says something: not the runtime's notes about
/// backtraces, which follow the real message of an abort ("memory allocation of 4 bytes
/// failed").
fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.contains("backtrace"))
        .unwrap_or("")
}

/// Puts the driver's samples of a worker's memory into its record (or why there are
/// none into its `unavailable`).
pub fn with_memory(mut record: RunRecord, run: spawn::ChildRun) -> RunRecord {
    match run.memory {
        Ok(samples) => {
            // The idle phase on the samples' clock (ms since the worker was released).
            let on_clock = |t: Option<u64>| {
                t.zip(run.start_unix_ns)
                    .map(|(t, start)| t.saturating_sub(start) as f64 / 1e6)
            };
            let idle_ms = on_clock(record.idle_start_unix_ns);
            // After the idle the worker prints its record and exits: samples of its exit
            // (memory torn down, not given back) are kept in the timeline but not in
            // the figures.
            let end = on_clock(record.idle_end_unix_ns).unwrap_or(f64::INFINITY);
            // The worker's own reading of the kernel's high-water mark stays.
            let hwm = record.memory[crate::model::metric::MEM_HWM];
            record.memory = crate::model::metric::MemoryFigures::of_samples(
                crate::model::memory::until(&samples, end),
                idle_ms,
            );
            record.memory[crate::model::metric::MEM_HWM] = hwm;
            record.counter_sources.insert(
                "memory".into(),
                format!(
                    "the driver read the worker's /proc/<pid>/statm every {} ms and its smaps_rollup every {} ms while it ran",
                    spawn::memory_every().map_or(0, |d| d.as_millis()),
                    spawn::FULL_SAMPLE_EVERY.as_millis()
                ),
            );
            record.memory_timeline = samples;
        }
        Err(why) => {
            record.unavailable.insert("memory".into(), why.0);
        }
    }
    record
}

/// A worker's request as its argument: JSON padded to one length in every cell
/// ([`crate::model::layout::pad_request`]).
fn request_text(request: &WorkerRequest) -> String {
    // Serializing these plain types cannot fail.
    crate::model::layout::pad_request(serde_json::to_string(request).unwrap_or_default())
}

/// A worker's environment: the driver's, without any allocator setting of its own, with
/// `spec`'s knobs and library set (so that the worker need not restart itself for them:
/// nothing the driver samples is of an image before a restart) and padded
/// to one length in every cell plus the draw's random part
/// ([`crate::model::layout::env_padding`]).
pub fn worker_env(spec: &RunSpec, layout: Option<LayoutDraw>) -> Vec<(OsString, OsString)> {
    let mut settings = spec.allocator_spec().env();
    // An installed library preloaded here, as the worker resolves it: otherwise the
    // worker restarts itself to preload it, and the driver's first memory samples are of
    // its image before the restart. (A file that does not resolve is left to the
    // worker, which says why.)
    let preload = spec.library.as_ref().and_then(|l| l.resolve().ok());
    if let Some(p) = &preload {
        settings.push(("LD_PRELOAD".into(), p.display().to_string()));
    }
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            !crate::model::knobs::is_allocator_env(&k)
                && k != crate::model::layout::PAD_ENV
                && !(preload.is_some() && k == "LD_PRELOAD")
        })
        .collect();
    let pad = crate::model::layout::env_padding(&settings, layout.map_or(0, |l| l.env_pad_bytes));
    env.extend(settings.into_iter().map(|(k, v)| (k.into(), v.into())));
    env.push((crate::model::layout::PAD_ENV.into(), pad.into()));
    env
}

/// Turns what a finished worker left behind into a record or a failure.
pub fn interpret(
    termination: spawn::Termination,
    stdout: &str,
    stderr: &str,
) -> Result<RunRecord, RunFailure> {
    let fail = |cause: String| Err(RunFailure { cause });
    match termination {
        spawn::Termination::Signaled { signal, .. } => {
            let tail = last_line(stderr);
            let extra = if tail.is_empty() {
                String::new()
            } else {
                format!(": {tail}")
            };
            return fail(format!(
                "killed by signal {signal} ({}){extra}",
                signal_name(signal)
            ));
        }
        spawn::Termination::Exited { code } if code != 0 => {
            return fail(format!("exit code {code}: {}", last_line(stderr)));
        }
        spawn::Termination::TimedOut => return fail("timed out and was killed".into()),
        spawn::Termination::Interrupted => return fail("interrupted (Ctrl-C) and killed".into()),
        spawn::Termination::Exited { .. } => {}
    }
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    match lines.as_slice() {
        [one] => RunRecord::from_json(one).map_err(|e| RunFailure {
            cause: format!("invalid output: {e}"),
        }),
        [] => fail("invalid output: the worker printed nothing".into()),
        _ => fail(format!(
            "invalid output: expected one JSON line, got {} lines",
            lines.len()
        )),
    }
}

/// Keeps the layout draws apart from the order's, which is seeded from the clock too.
const LAYOUT_STREAM: u64 = 0x6c61_796f_7574_0001;

impl ProcessExecutor {
    /// The next process's layout draw; None with the layout held fixed.
    fn draw_layout(&self) -> Option<LayoutDraw> {
        use std::sync::atomic::Ordering::Relaxed;
        (self.layout == LayoutMode::Random).then(|| {
            // One splitmix64 step from the state before this draw's.
            LayoutDraw::draw(|| {
                crate::analysis::stats::SplitMix(
                    self.layout_state.fetch_add(0x9E37_79B9_7F4A_7C15, Relaxed),
                )
                .next_u64()
            })
        })
    }

    /// The worker's executable and argument vector for `spec` (the serialized request),
    /// and the layout drawn for it.
    fn argv(
        &self,
        spec: &RunSpec,
        budget: &Budget,
        counters: CounterMode,
        cpu: Option<u32>,
    ) -> (PathBuf, Vec<OsString>, Option<LayoutDraw>) {
        let program = self.dir.join(spec.allocator.worker_binary());
        let request = WorkerRequest {
            spec: spec.clone(),
            budget: *budget,
            counters,
            timeline: false,
            cpu,
            layout: self.draw_layout(),
            stall: None,
        };
        let argv = vec![
            program.clone().into(),
            "--request".into(),
            request_text(&request).into(),
        ];
        (program, argv, request.layout)
    }

    fn timed_out(&self) -> RunFailure {
        RunFailure {
            cause: format!(
                "timed out after {} s and was killed ({})",
                crate::fmt::trim_float(self.timeout.as_secs_f64()),
                self.timeout_hint
            ),
        }
    }

    /// One worker process through the one spawn path ([`spawn::run`]): its own process
    /// group, killed on timeout or Ctrl-C, every descendant swept after it; plain, or
    /// under the ptrace tracer (`trace`).
    fn launch(
        &self,
        spec: &RunSpec,
        budget: &Budget,
        counters: CounterMode,
        trace: Option<ptrace::Scope>,
        cpu: Option<u32>,
    ) -> Result<spawn::ChildRun, RunFailure> {
        let (program, argv, layout) = self.argv(spec, budget, counters, cpu);
        self.launch_argv(spec, program, argv, layout, trace, false)
    }

    /// [`Self::launch`] of a given program and argument vector (the worker's, or a
    /// wrapper's such as `perf record … -- worker …`).
    fn launch_argv(
        &self,
        spec: &RunSpec,
        program: PathBuf,
        argv: Vec<OsString>,
        layout: Option<LayoutDraw>,
        trace: Option<ptrace::Scope>,
        evidence: bool,
    ) -> Result<spawn::ChildRun, RunFailure> {
        let env = worker_env(spec, layout);
        let cannot = |e: spawn::LaunchError| RunFailure {
            cause: format!("cannot start {}: {e}", spec.allocator.worker_binary()),
        };
        let prepared = spawn::Prepared::new(&program, &argv, &env).map_err(cannot)?;
        let run = spawn::run(
            &prepared,
            &spawn::LaunchOptions {
                show_output: false,
                // Set here, the worker need not restart itself to turn THP off.
                thp_never: spec.thp == crate::model::spec::Thp::Never,
                timeout: Some(self.timeout),
                count_syscalls: false,
                launcher_apart: false,
                trace,
                capture_stdout: true,
                log: if evidence {
                    ptrace::Log::Evidence
                } else {
                    ptrace::Log::Counts
                },
                record_faults: evidence,
                memory_every: trace.is_none().then(spawn::memory_every).flatten(),
                mark: false,
            },
        )
        .map_err(cannot)?;
        match run.termination {
            spawn::Termination::TimedOut => Err(self.timed_out()),
            spawn::Termination::Interrupted => Err(RunFailure {
                cause: "interrupted (Ctrl-C) and killed".into(),
            }),
            _ => Ok(run),
        }
    }

    /// One worker process for `request`, run under `wrapper` (a program and its arguments
    /// that end in `--`, e.g. `perf record … --`) when given: spawn, collect, interpret.
    /// The record is the worker's; whatever the wrapper writes goes to its own files.
    pub fn spawn_request(
        &self,
        request: &WorkerRequest,
        wrapper: Option<(PathBuf, Vec<OsString>)>,
    ) -> Result<RunRecord, RunFailure> {
        let (worker, own, layout) = self.request_argv(request);
        let wrapped = wrapper.is_some();
        let (program, argv) = match wrapper {
            Some((program, mut argv)) => {
                argv.extend(own);
                (program, argv)
            }
            None => (worker, own),
        };
        let mut run = self.launch_argv(&request.spec, program, argv, layout, None, false)?;
        if wrapped {
            run.memory = Err(crate::counters::Unavailable(
                "the worker ran under a wrapper (perf record), whose memory the driver would have sampled".into(),
            ));
        }
        interpret(
            run.termination,
            run.stdout.as_deref().unwrap_or(""),
            run.stderr_tail.as_deref().unwrap_or(""),
        )
        .map(|r| with_memory(r, run))
    }

    /// The worker of `request` and its argument vector.
    fn request_argv(
        &self,
        request: &WorkerRequest,
    ) -> (PathBuf, Vec<OsString>, Option<LayoutDraw>) {
        let worker = self.dir.join(request.spec.allocator.worker_binary());
        let mut request = request.clone();
        if request.layout.is_none() {
            request.layout = self.draw_layout();
        }
        let argv = vec![
            worker.clone().into(),
            "--request".into(),
            request_text(&request).into(),
        ];
        (worker, argv, request.layout)
    }

    /// `request` (with `counters: Ptrace`) under the ptrace tracer: the record and every
    /// memory syscall of its measured phase with the time the tracer saw it.
    pub fn spawn_request_traced(
        &self,
        request: &WorkerRequest,
    ) -> Result<(RunRecord, Vec<ptrace::TrappedCall>), RunFailure> {
        let (worker, argv, layout) = self.request_argv(request);
        let run = self.launch_argv(
            &request.spec,
            worker,
            argv,
            layout,
            Some(ptrace::Scope::Worker),
            false,
        )?;
        let record = interpret(
            run.termination,
            run.stdout.as_deref().unwrap_or(""),
            run.stderr_tail.as_deref().unwrap_or(""),
        )?;
        if run.markers != 2 {
            return Err(RunFailure {
                cause: format!(
                    "the traced worker marked {} phase boundaries instead of 2, so its calls are not trusted",
                    run.markers
                ),
            });
        }
        Ok((record, run.calls))
    }

    /// The evidence run of `spec` ([`crate::engine::evidence`]): one worker under the
    /// ptrace tracer keeping every memory syscall with its arguments, beside the
    /// recorder of its faults' addresses; what its measured phase did, and its record
    /// (whose counts the caller may hold against the timed processes').
    pub fn evidence_run(
        &self,
        spec: &RunSpec,
        budget: &Budget,
    ) -> Result<(RunRecord, Result<crate::model::evidence::Evidence, String>), RunFailure> {
        let (program, argv, layout) = self.argv(spec, budget, CounterMode::Ptrace, self.cpu);
        let run = self.launch_argv(
            spec,
            program,
            argv,
            layout,
            Some(ptrace::Scope::Worker),
            true,
        )?;
        let record = interpret(
            run.termination,
            run.stdout.as_deref().unwrap_or(""),
            run.stderr_tail.as_deref().unwrap_or(""),
        )
        .map_err(|f| RunFailure {
            cause: format!("evidence run: {}", f.cause),
        })?;
        let evidence = crate::engine::evidence::of_run(
            &run,
            crate::model::evidence::Per::Iteration,
            record.iterations as f64,
        );
        Ok((record, evidence))
    }

    /// One plain worker process: spawn, collect, interpret.
    pub fn spawn_worker(
        &self,
        spec: &RunSpec,
        budget: &Budget,
        counters: CounterMode,
    ) -> Result<RunRecord, RunFailure> {
        self.spawn_worker_on(spec, budget, counters, self.cpu)
    }

    /// [`Self::spawn_worker`] kept on `cpu`.
    fn spawn_worker_on(
        &self,
        spec: &RunSpec,
        budget: &Budget,
        counters: CounterMode,
        cpu: Option<u32>,
    ) -> Result<RunRecord, RunFailure> {
        let run = self.launch(spec, budget, counters, None, cpu)?;
        interpret(
            run.termination,
            run.stdout.as_deref().unwrap_or(""),
            run.stderr_tail.as_deref().unwrap_or(""),
        )
        .map(|r| with_memory(r, run))
    }

    /// One worker run under the ptrace tracer: its record (whose latency includes the
    /// tracing) and the memory-syscall counts of its measured phase.
    pub fn traced_pass(
        &self,
        spec: &RunSpec,
        budget: &Budget,
    ) -> Result<(RunRecord, Result<SyscallCounts, Unavailable>), RunFailure> {
        self.traced_pass_on(spec, budget, self.cpu)
    }

    /// [`Self::traced_pass`] kept on `cpu`.
    fn traced_pass_on(
        &self,
        spec: &RunSpec,
        budget: &Budget,
        cpu: Option<u32>,
    ) -> Result<(RunRecord, Result<SyscallCounts, Unavailable>), RunFailure> {
        let run = self.launch(
            spec,
            budget,
            CounterMode::Ptrace,
            Some(ptrace::Scope::Worker),
            cpu,
        )?;
        let record = interpret(
            run.termination,
            run.stdout.as_deref().unwrap_or(""),
            run.stderr_tail.as_deref().unwrap_or(""),
        )
        .map_err(|f| RunFailure {
            cause: format!("traced pass: {}", f.cause),
        })?;
        let counts = match (run.markers, run.syscalls) {
            (2, counts) => counts,
            (n, _) => Err(Unavailable(format!(
                "the traced worker marked {n} phase boundaries instead of 2, so its counts are not trusted"
            ))),
        };
        Ok((record, counts))
    }

    /// The ptrace method: latency and faults from an untraced pass, memory-syscall counts
    /// from a second, traced pass of the same run.
    fn ptrace_passes(
        &self,
        spec: &RunSpec,
        budget: &Budget,
        cpu: Option<u32>,
    ) -> Result<RunRecord, RunFailure> {
        let mut record = self.spawn_worker_on(spec, budget, CounterMode::Off, cpu)?;
        let (counted, counts) = self.traced_pass_on(spec, budget, cpu)?;
        if counted.checksum != record.checksum {
            return Err(RunFailure {
                cause: format!(
                    "the traced pass computed a different output ({} vs {})",
                    counted.checksum, record.checksum
                ),
            });
        }
        match counts {
            Ok(counts) => record.set_traced_syscalls(&counts, counted.iterations),
            Err(why) => {
                record.unavailable.insert("syscalls".into(), why.0);
            }
        }
        Ok(record)
    }
}

impl ProcessExecutor {
    /// One run of `spec` kept on `cpu`: one worker, or the ptrace method's two passes.
    fn run_on(
        &self,
        spec: &RunSpec,
        budget: &Budget,
        cpu: Option<u32>,
    ) -> Result<RunRecord, RunFailure> {
        match self.counters {
            CounterMode::Ptrace => self.ptrace_passes(spec, budget, cpu),
            mode => self.spawn_worker_on(spec, budget, mode, cpu),
        }
    }
}

impl Executor for ProcessExecutor {
    fn set_layout(&mut self, mode: LayoutMode) -> LayoutMode {
        std::mem::replace(&mut self.layout, mode)
    }

    fn execute(&mut self, spec: &RunSpec, budget: &Budget) -> Result<RunRecord, RunFailure> {
        self.run_on(spec, budget, self.cpu)
    }

    fn jobs(&self) -> usize {
        self.jobs.len().max(1)
    }

    fn evidence(&mut self, spec: &RunSpec, budget: &Budget) -> Recorded {
        match self.evidence_run(spec, budget) {
            Ok((_, evidence)) => evidence.into(),
            Err(f) => Recorded::Unrecorded(f.cause),
        }
    }

    /// Each spec in a worker of its own, all at once, the k-th kept on the k-th of
    /// [`ProcessExecutor::jobs`]' CPUs; each is killed on timeout or Ctrl-C as alone.
    fn execute_together(
        &mut self,
        specs: &[&RunSpec],
        budget: &Budget,
    ) -> Vec<Result<RunRecord, RunFailure>> {
        let jobs = self.jobs.len();
        if jobs < specs.len() {
            return specs.iter().map(|s| self.execute(s, budget)).collect();
        }
        let me = &*self;
        std::thread::scope(|scope| {
            // The first run on this thread, each other one on a thread of its own; a
            // thread that cannot be started (a process limit) fails its run, saying so.
            let others: Vec<_> = specs
                .iter()
                .zip(&me.jobs)
                .skip(1)
                .map(|(spec, &cpu)| {
                    std::thread::Builder::new()
                        .spawn_scoped(scope, move || me.run_on(spec, budget, Some(cpu)))
                        .map_err(|e| RunFailure {
                            cause: format!("cannot start a driver thread for this run: {e}"),
                        })
                })
                .collect();
            let first = specs
                .first()
                .map(|spec| me.run_on(spec, budget, me.jobs.first().copied()));
            first
                .into_iter()
                .chain(others.into_iter().map(|t| {
                    t?.join().unwrap_or_else(|_| {
                        Err(RunFailure {
                            cause: "the driver's thread for this run panicked".into(),
                        })
                    })
                }))
                .collect()
        })
    }
}

/// Records `cell`'s evidence: one more process of it under the recorder, shown on
/// `progress` as `what` (the caller counted it in the total), kept in the cell. Returns
/// false, recording nothing, when an interrupt came first or during it.
pub fn record_cell(
    cell: &mut crate::model::record::Cell,
    budget: &crate::model::budget::Budget,
    executor: &mut dyn crate::engine::executor::Executor,
    progress: &mut crate::ui::progress::Progress,
    what: &str,
) -> bool {
    if crate::ui::interrupt::interrupted() {
        return false;
    }
    progress.start(what);
    let recorded = executor.evidence(&cell.spec, budget);
    if crate::ui::interrupt::interrupted() {
        return false;
    }
    let failed = matches!(recorded, crate::model::evidence::Recorded::Unrecorded(_));
    progress.finish_with(
        match &recorded {
            crate::model::evidence::Recorded::Recorded(_) => "recorded",
            crate::model::evidence::Recorded::Unrecorded(why) => why,
        },
        failed,
    );
    cell.evidence = Some(recorded);
    true
}

/// A seed for the order within rounds when none is given: the clock's nanoseconds
/// (printed with the results, so that an order can be repeated with `--order-seed`).
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Runs every spec in `rounds` interleaved rounds of the one [`Schedule`]: one worker
/// process per spec per round, the order shuffled in every round from `order_seed`
/// (recorded by the caller). Stops after Ctrl-C; each cell keeps the rounds it finished.
pub fn run_rounds(
    specs: &[RunSpec],
    budget: &Budget,
    rounds: u32,
    order_seed: u64,
    executor: &mut dyn Executor,
    progress: &mut Progress,
    level: f64,
) -> Vec<Cell> {
    let unbounded = f64::INFINITY;
    run_rounds_within(
        specs, budget, rounds, unbounded, order_seed, executor, progress, level,
    )
    .0
}

/// [`run_rounds`] bounded by `max_time` seconds: the first round always runs, each later
/// one only when it would end in time at the last round's cost. The cells, and how many
/// rounds ran when the bound cut the `rounds` (None: all of them ran).
#[allow(clippy::too_many_arguments)] // run_rounds' arguments and the bound
pub fn run_rounds_within(
    specs: &[RunSpec],
    budget: &Budget,
    rounds: u32,
    max_time: f64,
    order_seed: u64,
    executor: &mut dyn Executor,
    progress: &mut Progress,
    level: f64,
) -> (Vec<Cell>, Option<u32>) {
    let every = vec![true; specs.len()];
    let started = std::time::Instant::now();
    let mut round_started = 0.0f64;
    let mut cut = None;
    let cells = run_rounds_while(
        specs,
        budget,
        order_seed,
        Order::Shuffled,
        level,
        executor,
        progress,
        &mut |done, _, _| {
            let elapsed = started.elapsed().as_secs_f64();
            let last = elapsed - round_started;
            round_started = elapsed;
            if done >= rounds {
                return None;
            }
            if done > 0 && elapsed + last > max_time {
                // The caller sets its progress total: it knows what follows the rounds.
                cut = Some(done);
                return None;
            }
            Some(every.clone())
        },
    )
    .cells;
    (cells, cut)
}

/// Whether another round runs after `done`, and which cells take part: the plan of
/// [`run_rounds_while`].
pub type MoreRounds<'a> = &'a mut dyn FnMut(u32, &[Cell], &mut Progress) -> Option<Vec<bool>>;

/// What [`run_rounds_while`] measured: the cells, and every run in the order it ran as
/// (cell, round) — the run before each one, for order effects.
pub struct Session {
    /// One cell per spec, in the specs' order, each with the rounds it finished.
    pub cells: Vec<Cell>,
    /// Every run in the order it ran, as (cell index, 0-based round).
    pub sequence: Vec<(usize, u32)>,
}

/// [`run_rounds`] for as long as `more(rounds done, cells so far, progress)` says, with
/// the cells it names (`Some(takes part, per cell)`; `None` ends the session): adaptive
/// rounds go on only for the cells whose comparisons are still open (and grow the
/// progress total as they do).
#[allow(clippy::too_many_arguments)] // the session's plan, as compare gives it
pub fn run_rounds_while(
    specs: &[RunSpec],
    budget: &Budget,
    order_seed: u64,
    order: Order,
    level: f64,
    executor: &mut dyn Executor,
    progress: &mut Progress,
    more: MoreRounds<'_>,
) -> Session {
    struct Cells<'a> {
        specs: &'a [RunSpec],
        budget: &'a Budget,
        executor: &'a mut dyn Executor,
        progress: &'a mut Progress,
        more: MoreRounds<'a>,
        taking_part: Vec<bool>,
        cells: Vec<Cell>,
        sequence: Vec<(usize, u32)>,
        /// With several jobs: the runs of this round waiting to start together.
        pending: Vec<usize>,
    }
    impl Cells<'_> {
        /// Runs the pending runs of `round` at once (--jobs); Stop after Ctrl-C.
        fn flush(&mut self, round: u32) -> Next {
            let batch = std::mem::take(&mut self.pending);
            if batch.is_empty() {
                return Next::Keep;
            }
            let names: Vec<String> = batch.iter().map(|&i| self.specs[i].to_string()).collect();
            let together = if batch.len() > 1 { ", at once" } else { "" };
            self.progress.start(&format!(
                "{} (round {}{together})",
                names.join(" + "),
                round + 1
            ));
            let specs: Vec<&RunSpec> = batch.iter().map(|&i| &self.specs[i]).collect();
            let results = self.executor.execute_together(&specs, self.budget);
            for _ in &batch {
                self.progress.finish_one();
            }
            // After Ctrl-C the runs killed by it are no measurements; a run of the batch
            // that had finished is one, and is kept.
            let stopped = interrupted();
            for (i, result) in batch.into_iter().zip(results) {
                if stopped && result.is_err() {
                    continue;
                }
                self.cells[i].runs.push((round, result));
                self.sequence.push((i, round));
            }
            if stopped {
                return Next::Stop;
            }
            Next::Keep
        }
    }
    impl Rounds for Cells<'_> {
        fn more(&mut self, done: u32) -> bool {
            match (self.more)(done, &self.cells, self.progress) {
                Some(part) => {
                    self.taking_part = part;
                    true
                }
                None => false,
            }
        }
        fn takes_part(&self, subject: usize) -> bool {
            self.taking_part.get(subject).copied().unwrap_or(true)
        }
        fn step(&mut self, i: usize, pass: Pass, _: usize) -> Next {
            let Pass::Round(round) = pass else {
                return Next::Keep;
            };
            if self.executor.jobs() > 1 {
                self.pending.push(i);
                if self.pending.len() < self.executor.jobs() {
                    return Next::Keep;
                }
                return self.flush(round);
            }
            let spec = &self.specs[i];
            self.progress
                .start(&format!("{spec} (round {})", round + 1));
            let result = self.executor.execute(spec, self.budget);
            self.progress.finish_one();
            if interrupted() {
                // The run under way got the same Ctrl-C: not a measurement.
                return Next::Stop;
            }
            self.cells[i].runs.push((round, result));
            self.sequence.push((i, round));
            Next::Keep
        }
        fn end_round(&mut self, pass: Pass) -> Next {
            match pass {
                Pass::Round(round) => self.flush(round),
                Pass::Warmup(_) => Next::Keep,
            }
        }
    }
    let mut plan = Cells {
        specs,
        budget,
        executor,
        progress,
        more,
        taking_part: Vec::new(),
        sequence: Vec::new(),
        pending: Vec::new(),
        cells: specs
            .iter()
            .map(|spec| Cell {
                spec: spec.clone(),
                runs: Vec::new(),
                level,
                evidence: None,
            })
            .collect(),
    };
    Schedule {
        subjects: specs.len(),
        warmup: 0,
        seed: order_seed,
        order,
    }
    .run(&mut plan);
    Session {
        cells: plan.cells,
        sequence: plan.sequence,
    }
}

/// Measures `base` at `size` for a cliff search: the run's record and its `metric`.
pub fn probe(
    exec: &mut dyn Executor,
    base: &RunSpec,
    budget: &Budget,
    size: u64,
    metric: Metric,
) -> Result<Probe, CliffError> {
    let spec = RunSpec {
        size,
        ..base.clone()
    };
    let mode = exec.set_layout(LayoutMode::Fixed);
    let record = exec.execute(&spec, budget);
    exec.set_layout(mode);
    if interrupted() {
        return Err(CliffError::Interrupted(size));
    }
    let record = record.map_err(|RunFailure { cause }| {
        CliffError::Run(format!("run at size {size} failed: {cause}"))
    })?;
    let value = metric.value(&record).ok_or_else(|| {
        CliffError::Unavailable(
            metric.name(),
            record
                .unavailable
                .get("syscalls")
                .cloned()
                .unwrap_or_default(),
        )
    })?;
    Ok(Probe {
        size,
        value,
        noise: 0.0,
        record,
    })
}

/// Runs that compute the same thing (workload, size, seed) but disagree on the answer.
/// Returns one message per disagreeing group.
pub fn checksum_conflicts(outcomes: &[Outcome]) -> Vec<String> {
    let mut groups: BTreeMap<(String, u64, u64), Vec<(String, String)>> = BTreeMap::new();
    for o in outcomes {
        if let Ok(r) = &o.result {
            groups
                .entry((r.workload.to_string(), r.size, r.seed))
                .or_default()
                .push((
                    format!("{} {}", r.spec().allocator_label(), r.variant),
                    r.checksum.clone(),
                ));
        }
    }
    groups
        .into_iter()
        .filter(|(_, runs)| runs.iter().any(|(_, c)| *c != runs[0].1))
        .map(|((w, size, seed), runs)| {
            let list: Vec<String> = runs.iter().map(|(who, c)| format!("{who}={c}")).collect();
            format!(
                "runs of {w} at size {size} (seed {seed}) computed different outputs, so they are not compared: {}",
                list.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails every run, saying which spec it was asked for, and remembers the order.
    struct Recorder(Vec<String>);
    impl Executor for Recorder {
        fn execute(&mut self, spec: &RunSpec, _: &Budget) -> Result<RunRecord, RunFailure> {
            self.0.push(spec.to_string());
            Err(RunFailure {
                cause: spec.to_string(),
            })
        }
    }

    fn specs(n: u64) -> Vec<RunSpec> {
        (1..=n)
            .map(|size| RunSpec {
                allocator: crate::model::spec::Allocator::System,
                workload: crate::model::spec::Workload::Scale,
                variant: crate::model::spec::Variant::InPlace,
                size,
                threads: 1,
                seed: 1,
                knobs: Vec::new(),
                thp: Default::default(),
                library: None,
            })
            .collect()
    }

    #[test]
    fn rounds_run_every_cell_once_each_in_a_shuffled_order_fixed_by_the_seed() {
        let specs = specs(5);
        let run = |seed: u64| {
            let mut rec = Recorder(Vec::new());
            let mut progress = Progress::new(15);
            let cells = run_rounds(
                &specs,
                &Budget::default(),
                3,
                seed,
                &mut rec,
                &mut progress,
                crate::analysis::stats::DEFAULT_LEVEL,
            );
            (cells, rec.0)
        };
        let (cells, order) = run(9);
        assert_eq!(order.len(), 15);
        let mut rounds: Vec<Vec<String>> = order.chunks(5).map(<[String]>::to_vec).collect();
        assert_ne!(rounds[0], rounds[1], "each round has its own order");
        for round in &mut rounds {
            round.sort();
            let mut all: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
            all.sort();
            assert_eq!(*round, all, "every cell once per round");
        }
        for (cell, spec) in cells.iter().zip(&specs) {
            assert_eq!(cell.spec, *spec);
            let rounds: Vec<u32> = cell.runs.iter().map(|(r, _)| *r).collect();
            assert_eq!(rounds, vec![0, 1, 2]);
            assert!(cell
                .runs
                .iter()
                .all(|(_, r)| r.as_ref().unwrap_err().cause == spec.to_string()));
        }
        assert_eq!(run(9).1, order, "the same seed gives the same order");
        assert_ne!(run(10).1, order);
    }

    /// Runs `jobs` specs at once: remembers each batch.
    struct Batches(usize, Vec<Vec<String>>);
    impl Executor for Batches {
        fn execute(&mut self, spec: &RunSpec, _: &Budget) -> Result<RunRecord, RunFailure> {
            Err(RunFailure {
                cause: spec.to_string(),
            })
        }
        fn jobs(&self) -> usize {
            self.0
        }
        fn execute_together(
            &mut self,
            specs: &[&RunSpec],
            budget: &Budget,
        ) -> Vec<Result<RunRecord, RunFailure>> {
            self.1.push(specs.iter().map(|s| s.to_string()).collect());
            specs.iter().map(|s| self.execute(s, budget)).collect()
        }
    }

    #[test]
    fn with_jobs_a_round_runs_in_batches_of_that_many_in_its_order_and_no_batch_spans_rounds() {
        let specs = specs(5);
        let mut batches = Batches(2, Vec::new());
        let mut progress = Progress::new(15);
        let cells = run_rounds(
            &specs,
            &Budget::default(),
            3,
            9,
            &mut batches,
            &mut progress,
            crate::analysis::stats::DEFAULT_LEVEL,
        );
        let sizes: Vec<usize> = batches.1.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![2, 2, 1, 2, 2, 1, 2, 2, 1], "{:?}", batches.1);
        // The same order as one at a time, cut into batches.
        let mut one = Recorder(Vec::new());
        run_rounds(
            &specs,
            &Budget::default(),
            3,
            9,
            &mut one,
            &mut Progress::new(15),
            crate::analysis::stats::DEFAULT_LEVEL,
        );
        assert_eq!(batches.1.concat(), one.0);
        for (cell, spec) in cells.iter().zip(&specs) {
            let rounds: Vec<u32> = cell.runs.iter().map(|(r, _)| *r).collect();
            assert_eq!(rounds, vec![0, 1, 2]);
            assert!(cell
                .runs
                .iter()
                .all(|(_, r)| r.as_ref().unwrap_err().cause == spec.to_string()));
        }
    }

    #[test]
    fn an_aborted_worker_row_carries_its_message_not_the_backtrace_note() {
        // What a Rust worker prints when the allocator fails it (glibc with a huge
        // top_pad): the message, then the runtime's note, then SIGABRT.
        let stderr = "memory allocation of 4 bytes failed\nmemory allocation of 1 bytes failed\nskipping backtrace printing to avoid potential recursion\n";
        let aborted = spawn::Termination::Signaled {
            signal: libc::SIGABRT,
            core_dumped: false,
        };
        let e = interpret(aborted, "", stderr).unwrap_err().cause;
        assert_eq!(
            e,
            "killed by signal 6 (SIGABRT): memory allocation of 1 bytes failed"
        );
    }

    #[test]
    fn interpret_reports_signals_codes_and_garbage() {
        use spawn::Termination;
        let killed = Termination::Signaled {
            signal: libc::SIGKILL,
            core_dumped: false,
        };
        let e = interpret(killed, "", "").unwrap_err().cause;
        assert!(e.contains("signal 9 (SIGKILL)"), "{e}");
        let code3 = Termination::Exited { code: 3 };
        let e = interpret(code3, "", "x\nalloclab-system: error: boom\n")
            .unwrap_err()
            .cause;
        assert_eq!(e, "exit code 3: alloclab-system: error: boom");
        let ok = Termination::Exited { code: 0 };
        assert!(interpret(ok, "hello", "")
            .unwrap_err()
            .cause
            .contains("invalid output: not JSON"));
        assert!(interpret(ok, "", "")
            .unwrap_err()
            .cause
            .contains("printed nothing"));
    }
}
