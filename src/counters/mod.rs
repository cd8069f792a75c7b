//! Counters read around the measured phase: getrusage (faults, context switches, CPU
//! time), resident memory, and memory-syscall counts from perf tracepoints. Each source
//! answers with a value or an honest `Unavailable` reason, never a stand-in 0.

pub mod memory;
pub mod perf;
pub mod rusage;

use serde::{Deserialize, Serialize};

/// Why a counter has no value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// How syscalls are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum CounterMode {
    /// perf_event_open tracepoint counters on the worker itself (needs tracefs access).
    Perf,
    /// Do not count syscalls.
    Off,
}
