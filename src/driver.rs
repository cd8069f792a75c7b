//! The driver's side of a run: checks before spawning, one worker process per run, and
//! turning whatever the worker did (JSON, crash, signal, garbage) into an outcome.

use crate::counters::memory;
use crate::counters::perf::{SyscallCounters, SyscallCounts};
use crate::counters::ptrace;
use crate::counters::{CounterMode, Unavailable};
use crate::measure::Budget;
use crate::record::RunRecord;
use crate::spec::{Allocator, RunSpec};
use crate::workload;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Problems found before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{what} needs about {} per run (input plus live temporaries), but only {} is available (MemAvailable); choose a smaller --size", human_bytes(*.needed), human_bytes(*.available))]
    NotEnoughMemory {
        what: String,
        needed: u64,
        available: u64,
    },
    #[error(transparent)]
    Choice(#[from] crate::spec::UnknownChoice),
    #[error(transparent)]
    Knob(#[from] crate::knobs::KnobError),
    #[error("cannot read available memory: {0}")]
    MemInfo(std::io::Error),
    #[error("worker binary {} not found (looked in {}); build every binary with `make build` (cargo build --release)", .binary, .dir.display())]
    MissingWorker { binary: String, dir: PathBuf },
    #[error("cannot locate this executable to find the worker binaries beside it: {0}")]
    NoExe(std::io::Error),
}

/// "8.0 MiB" — binary units, one decimal.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Refuses runs that would not fit in the memory available now (runs go one at a time,
/// so the largest one counts).
pub fn check_memory(specs: &[RunSpec], available: u64) -> Result<(), PlanError> {
    let Some((spec, needed)) = specs
        .iter()
        .map(|s| (s, workload::peak_bytes(s.workload, s.variant, s.size)))
        .max_by_key(|(_, b)| *b)
    else {
        return Ok(());
    };
    if needed > available {
        return Err(PlanError::NotEnoughMemory {
            what: format!("{} {} at size {}", spec.workload, spec.variant, spec.size),
            needed,
            available,
        });
    }
    Ok(())
}

/// [`check_memory`] against this machine's MemAvailable.
pub fn check_memory_here(specs: &[RunSpec]) -> Result<(), PlanError> {
    check_memory(
        specs,
        memory::available_bytes().map_err(PlanError::MemInfo)?,
    )
}

/// Why a run produced no record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFailure {
    /// One line: "killed by signal 9 (SIGKILL)", "exit code 1: …", "invalid output: …".
    pub cause: String,
}

/// One run's spec and what came of it.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub spec: RunSpec,
    pub result: Result<RunRecord, RunFailure>,
}

/// Runs one spec and returns its record; a real one spawns a worker, tests use mocks.
pub trait Executor {
    fn execute(&mut self, spec: &RunSpec) -> Result<RunRecord, RunFailure>;
    /// Changes the measurement budget of the runs that follow (where it has one).
    fn set_budget(&mut self, _budget: Budget) {}
}

/// Spawns `alloclab-<allocator>` from a directory, one process per run.
pub struct ProcessExecutor {
    pub dir: PathBuf,
    pub budget: Budget,
    pub counters: CounterMode,
    pub timeout: Duration,
    /// Disabled tracepoint counters held by the driver itself. The kernel unregisters a
    /// tracepoint's perf probe — waiting for an RCU grace period, ~35 ms per tracepoint
    /// here — only when its last event closes; while the driver holds one, a worker's exit
    /// does not pay that (≈ 0.2 s per run). They count nothing: they are never enabled.
    _keepalive: Option<SyscallCounters>,
}

impl ProcessExecutor {
    /// `counters` Auto becomes Perf where the driver can open the tracepoint counters
    /// (workers run as the same user), else Ptrace where that is supported, else Off.
    pub fn new(dir: PathBuf, budget: Budget, counters: CounterMode, timeout: Duration) -> Self {
        let keepalive = match counters {
            CounterMode::Perf | CounterMode::Auto => SyscallCounters::open().ok(),
            CounterMode::Ptrace | CounterMode::Off => None,
        };
        let counters = match counters {
            CounterMode::Auto if keepalive.is_some() => CounterMode::Perf,
            CounterMode::Auto if ptrace::unsupported().is_none() => CounterMode::Ptrace,
            CounterMode::Auto => CounterMode::Perf,
            other => other,
        };
        ProcessExecutor {
            dir,
            budget,
            counters,
            timeout,
            _keepalive: keepalive,
        }
    }
}

/// The directory holding this executable, where the worker binaries are built.
pub fn workers_dir() -> Result<PathBuf, PlanError> {
    let exe = std::env::current_exe().map_err(PlanError::NoExe)?;
    Ok(exe
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".")))
}

/// Checks that every needed worker binary exists.
pub fn check_workers(dir: &Path, allocators: &[Allocator]) -> Result<(), PlanError> {
    for a in allocators {
        if !dir.join(a.worker_binary()).is_file() {
            return Err(PlanError::MissingWorker {
                binary: a.worker_binary().to_string(),
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

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
        _ => "signal",
    }
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// Turns what a finished worker left behind into a record or a failure.
pub fn interpret(
    status: std::process::ExitStatus,
    stdout: &str,
    stderr: &str,
) -> Result<RunRecord, RunFailure> {
    let fail = |cause: String| Err(RunFailure { cause });
    if let Some(sig) = status.signal() {
        let tail = last_line(stderr);
        let extra = if tail.is_empty() {
            String::new()
        } else {
            format!(": {tail}")
        };
        return fail(format!(
            "killed by signal {sig} ({}){extra}",
            signal_name(sig)
        ));
    }
    if !status.success() {
        let code = status.code().unwrap_or(-1);
        return fail(format!("exit code {code}: {}", last_line(stderr)));
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

impl ProcessExecutor {
    fn command(&self, spec: &RunSpec, counters: CounterMode) -> Command {
        let mut cmd = Command::new(self.dir.join(spec.allocator.worker_binary()));
        cmd.arg(format!("--workload={}", spec.workload))
            .arg(format!("--variant={}", spec.variant))
            .arg(format!("--size={}", spec.size))
            .arg(format!("--seed={}", spec.seed))
            .arg(format!("--threads={}", spec.threads))
            .args(self.budget.to_worker_args())
            .arg(format!("--counters={}", counters.name()))
            .arg(format!("--thp={}", spec.thp));
        if !spec.knobs.is_empty() {
            let knobs: Vec<String> = spec
                .knobs
                .iter()
                .map(|k| format!("{}={}", k.name, k.value))
                .collect();
            cmd.arg(format!("--knobs={}", knobs.join(",")));
        }
        cmd
    }

    fn timed_out(&self) -> RunFailure {
        RunFailure {
            cause: format!(
                "timed out after {:.0} s and was killed (raise --timeout or lower --min-time/--size)",
                self.timeout.as_secs_f64()
            ),
        }
    }

    /// One plain worker process: spawn, collect, interpret.
    pub fn spawn_worker(
        &self,
        spec: &RunSpec,
        counters: CounterMode,
    ) -> Result<RunRecord, RunFailure> {
        let mut child = self
            .command(spec, counters)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunFailure {
                cause: format!("cannot start {}: {e}", spec.allocator.worker_binary()),
            })?;
        let pid = child.id();
        let mut out = child.stdout.take();
        let mut err = child.stderr.take();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut o = String::new();
            let mut e = String::new();
            let err_thread = std::thread::spawn(move || {
                if let Some(s) = err.as_mut() {
                    let _ = s.read_to_string(&mut e);
                }
                e
            });
            if let Some(s) = out.as_mut() {
                let _ = s.read_to_string(&mut o);
            }
            let e = err_thread.join().unwrap_or_default();
            let status = child.wait();
            let _ = tx.send(());
            (status, o, e)
        });
        let timed_out = rx.recv_timeout(self.timeout).is_err();
        if timed_out {
            // SAFETY: kill has no memory-safety preconditions; the child is not yet
            // reaped (the reader thread is still waiting for it), so `pid` is still it.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        let (status, stdout, stderr) = reader.join().map_err(|_| RunFailure {
            cause: "internal error: the output reader panicked".into(),
        })?;
        let status = status.map_err(|e| RunFailure {
            cause: format!("waiting for the worker failed: {e}"),
        })?;
        if timed_out {
            return Err(self.timed_out());
        }
        interpret(status, &stdout, &stderr)
    }

    /// One worker run under the ptrace tracer: its record (whose latency includes the
    /// tracing) and the memory-syscall counts of its measured phase.
    pub fn traced_pass(
        &self,
        spec: &RunSpec,
    ) -> Result<(RunRecord, Result<SyscallCounts, Unavailable>), RunFailure> {
        let traced = ptrace::run_traced(self.command(spec, CounterMode::Ptrace), self.timeout)
            .map_err(|e| RunFailure {
                cause: format!("cannot trace {}: {e}", spec.allocator.worker_binary()),
            })?;
        if traced.timed_out {
            return Err(self.timed_out());
        }
        let record =
            interpret(traced.status, &traced.stdout, &traced.stderr).map_err(|f| RunFailure {
                cause: format!("traced pass: {}", f.cause),
            })?;
        Ok((record, traced.counts))
    }

    /// The ptrace method: latency and faults from an untraced pass, memory-syscall counts
    /// from a second, traced pass of the same run.
    fn ptrace_passes(&self, spec: &RunSpec) -> Result<RunRecord, RunFailure> {
        let mut record = self.spawn_worker(spec, CounterMode::Off)?;
        let (counted, counts) = self.traced_pass(spec)?;
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

impl Executor for ProcessExecutor {
    fn execute(&mut self, spec: &RunSpec) -> Result<RunRecord, RunFailure> {
        match self.counters {
            CounterMode::Ptrace => self.ptrace_passes(spec),
            mode => self.spawn_worker(spec, mode),
        }
    }

    fn set_budget(&mut self, budget: Budget) {
        self.budget = budget;
    }
}

/// Runs every spec in order, one at a time, telling `progress` before each one.
pub fn run_all(
    specs: &[RunSpec],
    executor: &mut dyn Executor,
    progress: &mut dyn FnMut(usize, &RunSpec),
) -> Vec<Outcome> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            progress(i, spec);
            Outcome {
                spec: spec.clone(),
                result: executor.execute(spec),
            }
        })
        .collect()
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
    use crate::spec::{Variant, Workload};

    fn spec(variant: Variant, size: u64) -> RunSpec {
        RunSpec {
            allocator: Allocator::System,
            workload: Workload::Scale,
            variant,
            size,
            threads: 1,
            seed: 1,
            knobs: Vec::new(),
            thp: Default::default(),
        }
    }

    #[test]
    fn memory_check_names_the_largest_run_and_both_amounts() {
        let specs = [
            spec(Variant::InPlace, 1000),
            spec(Variant::OutOfPlace, 1000),
        ];
        assert!(check_memory(&specs, 17_000).is_ok());
        let e = check_memory(&specs, 16_999).unwrap_err().to_string();
        assert!(e.contains("out-of-place"), "{e}");
        assert!(e.contains("16.6 KiB"), "{e}");
        assert!(e.contains("available"), "{e}");
    }

    #[test]
    fn human_bytes_scales() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(8 << 20), "8.0 MiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn interpret_reports_signals_codes_and_garbage() {
        use std::process::ExitStatus;
        let killed = ExitStatus::from_raw(libc::SIGKILL);
        let e = interpret(killed, "", "").unwrap_err().cause;
        assert!(e.contains("signal 9 (SIGKILL)"), "{e}");
        let code3 = ExitStatus::from_raw(3 << 8);
        let e = interpret(code3, "", "x\nalloclab-system: error: boom\n")
            .unwrap_err()
            .cause;
        assert_eq!(e, "exit code 3: alloclab-system: error: boom");
        let ok = ExitStatus::from_raw(0);
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
