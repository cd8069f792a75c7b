//! The entry point every worker binary calls: parse the run, measure it on the main
//! thread, print one JSON record on stdout.

use crate::counters::envinfo::{AllocatorInfo, AllocatorStats, Environment};
use crate::counters::linux::perf::SyscallCounters;
use crate::counters::{CounterMode, SyscallSource, Unavailable};
use crate::model::knobs::AllocatorSpec;
use crate::model::library::Library;
use crate::model::record::RunRecord;
use crate::model::run::{RunSpec, WorkerRequest};
use crate::model::spec::{self, Allocator, Thp, Variant, Workload};
use crate::worker::measure;
use crate::worker::workload;
use clap::Parser;
use std::path::Path;
use std::process::ExitCode;

/// Arguments of a worker (`alloclab-<allocator> --workload scale --variant in-place …`).
#[derive(Debug, Parser)]
#[command(
    about = "Runs one alloclab measurement under this binary's allocator and prints one JSON record"
)]
pub struct WorkerArgs {
    #[arg(long, default_value = "scale", value_parser = spec::parse_choice::<Workload>)]
    pub workload: Workload,
    #[arg(long, value_parser = spec::parse_choice::<Variant>, required_unless_present_any = ["observer_costs", "describe", "request"])]
    pub variant: Option<Variant>,
    /// Elements in the input array (1000000, 1e6, 2^20).
    #[arg(long, value_parser = spec::parse_size, required_unless_present_any = ["observer_costs", "describe", "request"])]
    pub size: Option<u64>,
    /// Instead of a run: measure what each part of the observer costs, print it as JSON.
    #[arg(long)]
    pub observer_costs: bool,
    /// Instead of a run: print the allocator's version and crates as JSON.
    #[arg(long)]
    pub describe: bool,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    #[command(flatten)]
    pub budget: crate::model::budget::BudgetArgs,
    #[arg(long, value_enum, default_value = "perf")]
    pub counters: CounterMode,
    /// Allocator knobs, e.g. "dirty_decay_ms=-1,oversize_threshold=16M" (this worker's
    /// allocator's; `alloclab list` shows them). Applied through the allocator's own
    /// mechanism: the worker restarts itself with that environment.
    #[arg(long, default_value = "")]
    pub knobs: String,
    /// An installed allocator library to run under instead of glibc (system worker only),
    /// as name=/path/lib.so: the worker restarts itself with it in LD_PRELOAD and fails
    /// unless the library then defines the process's malloc.
    #[arg(long)]
    pub library: Option<String>,
    /// never: THP disabled for the worker (prctl) before it starts.
    #[arg(long, default_value = "system", value_parser = spec::parse_choice::<Thp>)]
    pub thp: Thp,
    /// Record every measured iteration (start, latency, faults, RSS, heap top) into the
    /// record's `timeline`; each iteration is then timed alone. Needs --max-iters of at
    /// most 1,000,000.
    #[arg(long)]
    pub timeline: bool,
    /// Keep every thread of the run on this CPU (sched_setaffinity), e.g. 0.
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Indent the JSON.
    #[arg(long)]
    pub pretty: bool,
    /// The whole run as the lab sends it, one JSON object ({"spec": …, "budget": …,
    /// "counters": …}, see `model::run::WorkerRequest`); the run's flags above are then
    /// not used.
    #[arg(long, value_name = "JSON")]
    pub request: Option<String>,
}

/// The run a worker is asked for: its `--request`, or the flags a person types. The
/// knobs and the library are checked the same way for both.
pub fn request(args: &WorkerArgs, allocator: Allocator) -> anyhow::Result<WorkerRequest> {
    if let Some(text) = &args.request {
        let r: WorkerRequest = serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("--request is not a run request: {e}"))?;
        if r.spec.allocator != allocator {
            anyhow::bail!(
                "--request asks for {}, but this worker runs {allocator}",
                r.spec.allocator
            );
        }
        // The knobs as a person would write them go through the one spec parser.
        let knobs: Vec<String> = r
            .spec
            .knobs
            .iter()
            .map(|k| format!("{}={}", k.name, k.value))
            .collect();
        parse_knobs(allocator, &knobs.join(","))?;
        if r.spec.library.is_some() && allocator != Allocator::System {
            anyhow::bail!("a library is for the system worker (alloclab-system)");
        }
        return Ok(r);
    }
    let alloc_spec = parse_knobs(allocator, &args.knobs)?;
    let library = parse_library(allocator, args.library.as_deref())?;
    let (Some(variant), Some(size)) = (args.variant, args.size) else {
        anyhow::bail!("--variant and --size are required for a run");
    };
    Ok(WorkerRequest {
        spec: RunSpec {
            allocator,
            workload: args.workload,
            variant,
            size,
            threads: args.threads,
            seed: args.seed,
            knobs: alloc_spec.knobs,
            thp: args.thp,
            library,
        },
        budget: args.budget.budget(),
        counters: args.counters,
        timeline: args.timeline,
        cpu: args.cpu,
        layout: None,
        stall: None,
    })
}

/// Runs one measurement and returns its record (`preload`: the installed library's
/// resolved file, if the request names one). Must be called on the main thread.
pub fn run(
    request: &WorkerRequest,
    preload: Option<&Path>,
    info: &AllocatorInfo,
) -> anyhow::Result<RunRecord> {
    let spec = &request.spec;
    if spec.threads == 0 {
        anyhow::bail!("--threads 0: a run needs at least 1 thread (the main thread)");
    }
    if let Some(why) = spec.workload.refuses(spec.variant) {
        anyhow::bail!("{why}");
    }
    let size = usize::try_from(spec.size)?;
    if let Some(cpu) = request.cpu {
        crate::counters::conditions::pin_to(cpu)
            .map_err(|e| anyhow::anyhow!("--cpu {cpu}: {e}"))?;
    }
    let library = spec.library.as_ref().zip(preload);
    let budget = request.budget;
    // The layout draw's heap shift, before anything of the workload and kept to the end:
    // it moves where the heap's later blocks start, which the allocator does not decide
    // ([`crate::model::layout`]). Written, so that it is really allocated.
    let _heap_shift = request
        .layout
        .map(|l| heap_shift(l.heap_shift_bytes as usize));
    if let (Some(knob), 0) = (crate::model::knobs::needs_idle(&spec.knobs), budget.idle_ns) {
        anyhow::bail!(
            "{knob}=true acts at the start of the idle phase, and this run has none: give the experiment's [budget] an idle_time (e.g. idle_time = 2.0)"
        );
    }
    // Kept to the end of the run: freed now, it would move glibc's thresholds.
    let (overhead, _observer_memory) = measure::calibrate();
    // NumPy's huge-page advice on every buffer of 4 MiB or more, inputs included.
    workload::advise_huge_pages(spec.thp == Thp::Advise);
    let timeline = if request.timeline {
        if budget.max_iters > measure::TIMELINE_MAX_ITERS {
            anyhow::bail!(
                "a timeline keeps every iteration: --max-iters {} is more than {} (give a smaller --max-iters)",
                budget.max_iters,
                measure::TIMELINE_MAX_ITERS
            );
        }
        Some(budget.max_iters as usize)
    } else {
        None
    };
    // The burst: kernels prepared, counters opened, the measured phase, the allocator's
    // statistics and the checksum while the buffers are alive.
    let burst = || -> anyhow::Result<(measure::Measurement, u64, AllocatorStats)> {
        // Every thread gets its own kernel (its own inputs and temporaries), prepared here.
        let kernels = (0..spec.threads)
            .map(|_| {
                workload::prepare(
                    spec.workload,
                    spec.variant,
                    size,
                    spec.threads,
                    spec.seed,
                    request.stall,
                )
            })
            .collect();
        let mut perf = match request.counters {
            CounterMode::Perf | CounterMode::Auto => Some(SyscallCounters::open()),
            CounterMode::Ptrace | CounterMode::Off => None,
        };
        let source = match (&mut perf, request.counters) {
            (Some(Ok(c)), _) => SyscallSource::Perf(c),
            (Some(Err(why)), _) => SyscallSource::None(why.clone()),
            (None, CounterMode::Ptrace) => SyscallSource::PtraceMarkers,
            (None, _) => SyscallSource::None(Unavailable(
                "syscall counting is off (--counters off)".into(),
            )),
        };
        let mut m = measure::measure(
            kernels,
            &budget,
            source,
            overhead.timer_overhead_ns,
            timeline,
        )?;
        let stats = match &library {
            None => (info.stats)(),
            Some((l, _)) => Err(format!(
                "{} replaces glibc's malloc, so glibc's mallinfo2 does not describe it, and the lab knows no statistics call of an arbitrary library",
                l.name
            )),
        };
        let checksum = m.main_kernel.as_mut().map_or(0, |k| k.checksum());
        Ok((m, checksum, stats))
    };
    let (mut m, checksum, stats) = if crate::model::knobs::bursts_on_thread(&spec.knobs) {
        // The lab's own knob: the burst on a thread of its own, which frees its buffers
        // and exits (its helpers before it), so that no thread that allocated lives on
        // into the idle phase. Its counters are opened on it, as they are on the main
        // thread otherwise.
        std::thread::scope(|s| {
            s.spawn(|| {
                let (mut m, checksum, stats) = burst()?;
                drop(m.main_kernel.take());
                Ok((m, checksum, stats))
            })
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the burst's thread panicked")))
        })?
    } else {
        burst()?
    };
    let mut env = Environment::capture(info);
    if let Some((_, path)) = &library {
        env.allocator_version = match crate::counters::readback::library_version(path) {
            Some(v) => format!("{v} ({})", path.display()),
            None => format!("{} (no version at run time)", path.display()),
        };
        env.allocator_crates = String::new();
    }
    let mut record = RunRecord::new(spec, budget, &m, overhead, checksum, env);
    record.timeline = std::mem::take(&mut m.timeline);
    record.layout = request.layout;
    record.buffers = super::buffers::alignments();
    if let Some(c) = record.conditions.as_mut() {
        c.pinned = request.cpu;
    }
    for k in spec
        .knobs
        .iter()
        .filter(|k| !crate::model::knobs::is_lab_knob(&k.name))
    {
        let effective = match (info.read_knob)(&k.name) {
            Ok(v) if v == k.value => v,
            Ok(v) => anyhow::bail!(
                "knob {}={} did not take effect: the allocator reports {v}",
                k.name,
                k.value
            ),
            Err(why) => format!("unverified: {why}"),
        };
        record.knobs_effective.insert(k.name.clone(), effective);
    }
    record.thp_disabled = thp_disabled();
    match stats {
        Ok(s) => record.allocator_stats = s.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        Err(why) => {
            record.unavailable.insert("allocator_stats".into(), why);
        }
    }
    if budget.idle_ns > 0 {
        // After the burst: every buffer freed (the helper threads, and theirs, are gone
        // already), then nothing but waiting, while the driver samples what the
        // allocator gives back.
        drop(m);
        if crate::model::knobs::releases_at_idle(&spec.knobs) {
            // The lab's own knob: the allocator asked to give its free memory back, once,
            // before the idle is sampled; what it answered is kept with the knobs, and its
            // statistics just before the call beside those after the idle.
            if library.is_none() {
                if let Ok(s) = (info.stats)() {
                    record.allocator_stats_before_release =
                        s.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
                }
            }
            let said = (info.release)().map_err(|why| {
                anyhow::anyhow!("{}=true: {why}", crate::model::knobs::RELEASE_AT_IDLE)
            })?;
            record.knobs_effective.insert(
                crate::model::knobs::RELEASE_AT_IDLE.into(),
                format!("true: {said} at the idle's start"),
            );
        }
        record.idle_start_unix_ns = crate::counters::unix_now_ns();
        std::thread::sleep(std::time::Duration::from_nanos(budget.idle_ns));
        record.idle_end_unix_ns = crate::counters::unix_now_ns();
        record.live_bytes_after_idle = super::alloc_count::live_bytes();
        if library.is_none() {
            if let Ok(s) = (info.stats)() {
                record.allocator_stats_after_idle =
                    s.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            }
        }
    }
    // The kernel's high-water mark of this image's resident set, last: the peak the
    // driver's samples may fall between.
    match crate::counters::memory::vm_hwm_bytes() {
        Ok(v) => record.memory[crate::model::metric::MEM_HWM] = Some(v as f64),
        Err(why) => {
            record.unavailable.insert("mem_hwm".into(), why);
        }
    }
    Ok(record)
}

/// A block that moves the heap's top by [`crate::model::layout::HEAP_FLOOR`] plus
/// `shift` bytes: larger than any block freed while the worker started (its request,
/// its arguments), so that glibc carves it from the top of its heap rather than from a
/// hole it leaves where it was. Its first byte written, so that it is really there.
fn heap_shift(shift: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(crate::model::layout::HEAP_FLOOR + shift);
    v.push(1u8);
    std::hint::black_box(v)
}

/// The `--library` spec, for the system worker only (its file is resolved once, in
/// `main`).
fn parse_library(allocator: Allocator, text: Option<&str>) -> anyhow::Result<Option<Library>> {
    let Some(text) = text else { return Ok(None) };
    if allocator != Allocator::System {
        anyhow::bail!("--library is for the system worker (alloclab-system), which runs under glibc unless a library is preloaded");
    }
    let library = Library::parse(text, |n| spec::parse_choice::<Allocator>(n).is_ok())
        .map_err(anyhow::Error::msg)?
        .ok_or_else(|| anyhow::anyhow!("--library {text}: expected name=/path/to/lib.so"))?;
    Ok(Some(library))
}

/// Fails unless `malloc` in this process is defined by `path` (the preloaded library).
fn check_takeover(library: &Library, path: &Path) -> anyhow::Result<()> {
    let from = crate::counters::readback::symbol("malloc")
        .and_then(crate::counters::readback::defining_object);
    match from {
        Some(f) if crate::model::library::same_file(Path::new(&f), path) => Ok(()),
        Some(f) => anyhow::bail!(
            "{} did not take over malloc: with {} preloaded, malloc still comes from {f} (is it an allocator library that defines malloc?)",
            library.name,
            path.display()
        ),
        None => anyhow::bail!(
            "{}: cannot tell where malloc comes from (dladdr found no object)",
            library.name
        ),
    }
}

fn parse_knobs(allocator: Allocator, knobs: &str) -> anyhow::Result<AllocatorSpec> {
    let text = if knobs.trim().is_empty() {
        allocator.to_string()
    } else {
        format!("{allocator}:{knobs}")
    };
    Ok(text.parse::<AllocatorSpec>()?)
}

/// PR_GET_THP_DISABLE: whether transparent huge pages are off for this process.
fn thp_disabled() -> Option<bool> {
    // SAFETY: prctl PR_GET_THP_DISABLE takes no pointers.
    let r = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
    (r >= 0).then_some(r == 1)
}

/// The dynamic loader's variable that preloads a library.
const PRELOAD_ENV: &str = "LD_PRELOAD";

/// Marks a worker that restarted itself to apply its allocator environment.
const REEXEC_MARK: &str = "ALLOCLAB_WORKER_RESTARTED";

/// The allocator configuration must be in place before the allocator starts, which is
/// before `main`: when the environment does not already hold exactly the requested
/// knobs (and no allocator settings inherited from elsewhere), or THP must be turned off,
/// the worker sets that up and restarts itself. Returns only if nothing needs doing.
fn restart_configured(
    spec: &AllocatorSpec,
    thp: Thp,
    preload: Option<&Path>,
) -> anyhow::Result<()> {
    let mut wanted: std::collections::BTreeMap<String, String> = spec.env().into_iter().collect();
    if let Some(p) = preload {
        wanted.insert(PRELOAD_ENV.into(), p.display().to_string());
    }
    let present: std::collections::BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| {
            crate::model::knobs::is_allocator_env(k) || (preload.is_some() && k == PRELOAD_ENV)
        })
        .collect();
    let thp_ok = thp != Thp::Never || thp_disabled() == Some(true);
    if wanted == present && thp_ok {
        return Ok(());
    }
    if std::env::var_os(REEXEC_MARK).is_some() {
        anyhow::bail!("the allocator environment or THP setting did not survive the restart");
    }
    if thp == Thp::Never {
        // SAFETY: prctl PR_SET_THP_DISABLE takes no pointers; it survives exec.
        if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0 {
            anyhow::bail!(
                "prctl(PR_SET_THP_DISABLE): {}",
                std::io::Error::last_os_error()
            );
        }
    }
    let mut cmd = std::process::Command::new("/proc/self/exe");
    let mut argv = std::env::args_os();
    if let Some(arg0) = argv.next() {
        std::os::unix::process::CommandExt::arg0(&mut cmd, arg0);
    }
    cmd.args(argv);
    for k in present.keys() {
        cmd.env_remove(k);
    }
    cmd.envs(wanted).env(REEXEC_MARK, "1");
    let err = std::os::unix::process::CommandExt::exec(&mut cmd);
    anyhow::bail!("restarting the worker with its allocator settings failed: {err}")
}

/// `main` of a worker binary.
pub fn main(allocator: Allocator, info: AllocatorInfo) -> ExitCode {
    let args = WorkerArgs::parse();
    let bin = allocator.worker_binary();
    if args.describe {
        let about = serde_json::json!({ "version": info.version, "crates": info.crates });
        println!("{about}");
        return ExitCode::SUCCESS;
    }
    if args.observer_costs {
        let configured = parse_knobs(allocator, &args.knobs)
            .and_then(|spec| restart_configured(&spec, args.thp, None));
        if let Err(e) = configured {
            eprintln!("{bin}: error: {e:#}");
            return ExitCode::from(2);
        }
        let costs = measure::observer_costs();
        return match serde_json::to_string(&costs) {
            Ok(t) => {
                println!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{bin}: error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let configured = request(&args, allocator).and_then(|r| {
        // The installed library's file, resolved once for the restart, the takeover
        // check and the record.
        let preload = match &r.spec.library {
            Some(l) => Some(l.resolve().map_err(anyhow::Error::msg)?),
            None => None,
        };
        if let Some(cpu) = r.cpu {
            crate::counters::conditions::check_cpu(cpu)
                .map_err(|e| anyhow::anyhow!("--cpu {cpu}: {e}"))?;
        }
        restart_configured(&r.spec.allocator_spec(), r.spec.thp, preload.as_deref())?;
        if let (Some(l), Some(p)) = (&r.spec.library, &preload) {
            check_takeover(l, p)?;
        }
        Ok((r, preload))
    });
    let (request, preload) = match configured {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{bin}: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    match run(&request, preload.as_deref(), &info) {
        Ok(record) => {
            let text = if args.pretty {
                serde_json::to_string_pretty(&record)
            } else {
                serde_json::to_string(&record)
            };
            match text {
                Ok(t) => {
                    println!("{t}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("{bin}: error: cannot serialize the record: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("{bin}: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
