//! Counts as plain data: a process's rusage and its memory-syscall counts (read by
//! [`crate::counters`], kept in records and rows).

use serde::{Deserialize, Serialize};

/// One getrusage (or wait4) reading of a process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rusage {
    /// Minor page faults (ru_minflt): pages mapped in without reading from disk.
    pub minflt: u64,
    /// Major page faults (ru_majflt): faults that had to read from disk.
    pub majflt: u64,
    /// Voluntary context switches (ru_nvcsw): the process blocked or yielded.
    pub nvcsw: u64,
    /// Involuntary context switches (ru_nivcsw): the process was preempted.
    pub nivcsw: u64,
    /// CPU time in user mode (ru_utime), in ns.
    pub utime_ns: u64,
    /// CPU time in the kernel (ru_stime), in ns.
    pub stime_ns: u64,
    /// Peak resident set of the process so far (ru_maxrss), in bytes (0 in a worker's
    /// record from before the record kept it).
    #[serde(default)]
    pub maxrss_bytes: u64,
}

#[cfg(test)]
impl Rusage {
    /// A reading of `faults` minor faults, `user_ns` of user time and a 20 MiB peak (for
    /// tests of what is made of readings).
    pub fn sample(faults: u64, user_ns: u64) -> Self {
        Rusage {
            minflt: faults,
            utime_ns: user_ns,
            maxrss_bytes: 20 << 20,
            ..Default::default()
        }
    }
}

/// Counts over one enabled window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallCounts {
    /// Calls to brk in the window (the heap's end moved).
    pub brk: u64,
    /// Calls to mmap in the window (memory mapped).
    pub mmap: u64,
    /// Calls to munmap in the window (memory unmapped).
    pub munmap: u64,
    /// Calls to madvise in the window (e.g. pages handed back with MADV_DONTNEED).
    pub madvise: u64,
    /// Calls to mremap in the window (a mapping resized or moved).
    pub mremap: u64,
    /// All syscalls of any kind (None where the method cannot see them all).
    pub all: Option<u64>,
}

impl SyscallCounts {
    /// These counts less `other`'s (counts of a part of what these counted), each at
    /// least 0.
    pub fn less(&self, other: &SyscallCounts) -> SyscallCounts {
        SyscallCounts {
            brk: self.brk.saturating_sub(other.brk),
            mmap: self.mmap.saturating_sub(other.mmap),
            munmap: self.munmap.saturating_sub(other.munmap),
            madvise: self.madvise.saturating_sub(other.madvise),
            mremap: self.mremap.saturating_sub(other.mremap),
            all: self.all.zip(other.all).map(|(a, b)| a.saturating_sub(b)),
        }
    }

    /// The memory syscalls: brk, mmap, munmap, madvise and mremap.
    pub fn memory(&self) -> u64 {
        self.brk + self.mmap + self.munmap + self.madvise + self.mremap
    }
}

/// How syscalls are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum CounterMode {
    /// perf where it works, else ptrace.
    Auto,
    /// perf_event_open tracepoint counters on what runs (root or CAP_PERFMON, and tracefs).
    Perf,
    /// A ptrace + seccomp tracer on what runs, in an extra pass (no privileges needed).
    Ptrace,
    /// Do not count syscalls.
    Off,
}

impl CounterMode {
    /// The mode's name as `--counters` takes it and records keep it.
    pub fn name(self) -> &'static str {
        match self {
            CounterMode::Auto => "auto",
            CounterMode::Perf => "perf",
            CounterMode::Ptrace => "ptrace",
            CounterMode::Off => "off",
        }
    }
}

/// The faults of a measured phase that mapped a transparent huge page (of any size),
/// the bytes they mapped, and the base page size every other fault mapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugeFaults {
    /// Faults that mapped a huge page.
    pub faults: u64,
    /// The bytes those faults mapped.
    pub bytes: u64,
    /// The base page size (what a fault maps without a huge page), in bytes.
    pub page_bytes: u64,
}
