//! Counters read around the measured phase: getrusage (faults, context switches, CPU
//! time), resident memory, and memory-syscall counts from perf tracepoints. Each source
//! answers with a value or an honest `Unavailable` reason, never a stand-in 0.

pub mod calls;
pub mod conditions;
pub mod envinfo;
pub mod hugefaults;
pub mod linux;
pub mod load;
pub mod memory;
pub mod readback;
pub mod rusage;

pub use linux::{perf, ptrace};

use serde::{Deserialize, Serialize};

/// Why a counter has no value (serialized as the bare reason).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{0}")]
#[serde(transparent)]
pub struct Unavailable(pub String);

impl From<String> for Unavailable {
    fn from(why: String) -> Self {
        Unavailable(why)
    }
}

impl From<&str> for Unavailable {
    fn from(why: &str) -> Self {
        Unavailable(why.to_string())
    }
}

pub use crate::model::counts::CounterMode;

/// Seconds since the epoch (0 if the clock reads before it).
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The wall clock (CLOCK_REALTIME) in ns since the Unix epoch, for when a run began (the
/// interval logs place each run at it); None if the clock reads before the epoch. A vDSO
/// read: no syscall, no allocation.
pub fn unix_now_ns() -> Option<u64> {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_nanos() as u64)
}

/// How syscalls are counted, once `--counters` is resolved on this machine (the one
/// place `auto` is decided, for compare, run, tune, cliff and exec alike).
pub enum CounterPlan {
    /// perf tracepoint counters on every measured run. The set held here stays open,
    /// disabled, for the whole session: closing the last user of a tracepoint costs an
    /// RCU grace period (~35 ms here) per run otherwise.
    Perf(perf::SyscallCounters),
    /// One extra run per allocator under the ptrace + seccomp tracer, after the measured
    /// ones (a trapped syscall slows a run, so traced runs are not timed).
    Ptrace,
    /// Not counted, and why.
    Unavailable(String),
}

/// Resolves `--counters`: `Err` when the method asked for cannot work here.
pub fn resolve(mode: CounterMode) -> Result<CounterPlan, Unavailable> {
    match mode {
        CounterMode::Off => Ok(CounterPlan::Unavailable("off: --counters off".into())),
        CounterMode::Perf => perf::SyscallCounters::open().map(CounterPlan::Perf),
        CounterMode::Ptrace => match ptrace::unsupported() {
            Some(why) => Err(why),
            None => Ok(CounterPlan::Ptrace),
        },
        CounterMode::Auto => match perf::SyscallCounters::open() {
            Ok(c) => Ok(CounterPlan::Perf(c)),
            Err(perf) => Ok(match ptrace::unsupported() {
                None => CounterPlan::Ptrace,
                Some(why) => {
                    CounterPlan::Unavailable(format!("unavailable: {}; {}", perf.0, why.0))
                }
            }),
        },
    }
}

/// Where the measured phase's syscall counts come from, inside a worker.
pub enum SyscallSource<'a> {
    /// perf counters opened by the worker.
    Perf(&'a mut perf::SyscallCounters),
    /// A ptrace tracer outside; the worker only marks the phase.
    PtraceMarkers,
    /// Not counted, and why.
    None(Unavailable),
}

impl SyscallSource<'_> {
    /// At the start of the measured phase. Does not allocate.
    pub fn start(&mut self) {
        match self {
            SyscallSource::Perf(c) => c.enable(),
            SyscallSource::PtraceMarkers => ptrace::phase_marker(),
            SyscallSource::None(_) => {}
        }
    }

    /// At the end of the measured phase. Does not allocate.
    pub fn stop(&mut self) {
        match self {
            SyscallSource::Perf(c) => c.disable(),
            SyscallSource::PtraceMarkers => ptrace::phase_marker(),
            SyscallSource::None(_) => {}
        }
    }

    /// The counts, or why the worker has none itself.
    pub fn read(&mut self) -> Result<perf::SyscallCounts, Unavailable> {
        match self {
            SyscallSource::Perf(c) => c.read(),
            SyscallSource::PtraceMarkers => Err(Unavailable(match ptrace::tracer_pid() {
                Some(pid) => format!("counted by the ptrace tracer (pid {pid}) outside this worker"),
                None => "--counters ptrace needs alloclab's tracer (alloclab compare/run --counters ptrace); none is attached".into(),
            })),
            SyscallSource::None(why) => Err(why.clone()),
        }
    }
}
