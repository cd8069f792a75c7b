//! What the lab measures, listed once: the registry [`METRICS`]. Each entry is one count
//! a run's record and a cell's summary carry per iteration: its column, its label and
//! unit, the source it is read from, and the one change from which it is worth naming as
//! a cause. Rows carry these figures as data keyed by the registry ([`Figures`]), so a
//! table, a chart, a guide or a finding lists them by walking the registry, and adding a
//! count is its source's total plus one entry here.

use crate::model::counts::{Rusage, SyscallCounts};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The noise band of a time verdict where nothing else is given (`--noise-threshold`'s
/// default, and the reports' own): a difference is a verdict only when its whole interval
/// lies beyond ±2 %.
pub const NOISE_THRESHOLD: f64 = 0.02;

/// The confidence level intervals aim at unless the user asks for another
/// (`alloclab --confidence`).
pub const DEFAULT_LEVEL: f64 = 0.95;

/// What a figure is counted per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    /// One iteration of a workload's measured loop.
    Iteration,
    /// One run of a user's command.
    Run,
    /// One process's life (a level, not a count: resident memory).
    Process,
}

/// The unit of a count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Events (faults, calls, switches).
    Count,
    /// Nanoseconds.
    Ns,
    /// Bytes.
    Bytes,
    /// Milliseconds (a run's CPU times).
    Ms,
    /// Mebibytes (a run's peak resident set).
    Mib,
}

/// Where a count is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// getrusage(RUSAGE_SELF) before and after the measured phase: faults, context
    /// switches, CPU time.
    Rusage,
    /// The syscall counter: perf's syscall tracepoints, or ptrace in a separate pass.
    Syscalls,
    /// The worker's counting global allocator.
    Allocations,
    /// The driver's samples of the process's memory (/proc/<pid>/smaps_rollup) while it
    /// ran.
    Memory,
    /// The process's own faults that mapped a transparent huge page (perf's
    /// `kmem:mm_page_alloc` of the huge page's order), counted over the measured phase
    /// (with getrusage's minor faults for the bytes).
    HugeFaults,
}

/// The totals of one measured phase, by source: what every per-iteration figure is
/// divided from.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SourceTotals {
    /// getrusage's differences over the phase (a run's whole reading).
    pub rusage: Option<Rusage>,
    /// The memory-syscall counts (and all syscalls where seen).
    pub syscalls: Option<SyscallCounts>,
    /// Allocation calls and the bytes they asked for.
    pub allocations: Option<(u64, u64)>,
    /// The peak resident set in bytes (ru_maxrss): a whole run's; None for a phase,
    /// whose reading holds the process's peak so far, not the phase's.
    pub peak_rss: Option<u64>,
    /// The figures of the process's memory samples, where it was sampled.
    pub memory: Option<crate::model::memory::MemorySummary>,
    /// The phase's faults that mapped a transparent huge page, where read.
    pub huge_faults: Option<crate::model::counts::HugeFaults>,
}

impl SourceTotals {
    /// The totals of one run of a user's command: its rusage (from wait4) and, where
    /// counted, its memory syscalls.
    pub fn of_run(u: &Rusage, syscalls: Option<SyscallCounts>) -> Self {
        SourceTotals {
            rusage: Some(*u),
            syscalls,
            allocations: None,
            peak_rss: Some(u.maxrss_bytes),
            memory: None,
            huge_faults: None,
        }
    }
}

/// One count the lab measures.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Its place in [`METRICS`] (and in a [`Figures`]).
    pub index: usize,
    /// The summary.csv column of its per-iteration figure.
    pub key: &'static str,
    /// What the console and the reports call it ("minor faults", "brk").
    pub label: &'static str,
    /// What the column guides say it is.
    pub meaning: &'static str,
    /// Its unit.
    pub unit: Unit,
    /// What it is counted per.
    pub per: Per,
    /// Where it is read.
    pub source: Source,
    /// The smallest change per iteration worth naming as a cause (below it two cells
    /// count the same); None for a count never named as a cause. Per run: the least
    /// margin by which a traced run's figure must leave the untraced runs' range to be
    /// a different behaviour; None for a figure the tracer itself moves (system time,
    /// context switches) or that is not compared.
    pub cause_from: Option<f64>,
    /// Whether it is a memory syscall (brk, mmap, munmap, madvise, mremap).
    pub syscall: bool,
    /// Whether a cell's summary also gives its lowest and highest process
    /// (`<key>_min`, `<key>_max`); per run, whether its runs are searched for two or
    /// more behaviours.
    pub spread: bool,
    /// Its total over a measured phase, from the sources' totals; None for a count
    /// derived from others (memory syscalls) or a source not read.
    pub total: fn(&SourceTotals) -> Option<u64>,
    /// What a total is divided by to give the figure in its unit besides the iterations
    /// (a run's CPU time in ms: 1e6; its peak RSS in MiB: 2^20); 1 for most.
    pub scale: f64,
    /// Its column in the console's tables ("minflt", "vcsw", "peak RSS").
    pub short: &'static str,
    /// Its measure in the CI formats ("minor-faults") and that measure's unit
    /// ("faults"), for the per-run figures CI reads; None where CI is not given it.
    pub ci: Option<(&'static str, &'static str)>,
}

/// No total of its own: a derived count.
fn derived(_: &SourceTotals) -> Option<u64> {
    None
}

/// A count of getrusage's `i`th figure.
const fn rusage(
    index: usize,
    key: &'static str,
    label: &'static str,
    meaning: &'static str,
    unit: Unit,
    total: fn(&SourceTotals) -> Option<u64>,
) -> Metric {
    Metric {
        index,
        key,
        label,
        meaning,
        unit,
        per: Per::Iteration,
        source: Source::Rusage,
        cause_from: None,
        syscall: false,
        spread: false,
        total,
        scale: 1.0,
        short: label,
        ci: None,
    }
}

/// A memory syscall counted per iteration, named from half a call per iteration (one
/// every other iteration).
const fn syscall(
    index: usize,
    key: &'static str,
    label: &'static str,
    meaning: &'static str,
    total: fn(&SourceTotals) -> Option<u64>,
) -> Metric {
    Metric {
        index,
        key,
        label,
        meaning,
        unit: Unit::Count,
        per: Per::Iteration,
        source: Source::Syscalls,
        cause_from: Some(0.5),
        syscall: true,
        spread: false,
        total,
        scale: 1.0,
        short: label,
        ci: None,
    }
}

/// Minor page faults: a page touched for the first time since it was (re)mapped.
pub const MINOR_FAULTS: Metric = Metric {
    cause_from: Some(1.0),
    spread: true,
    short: "minflt",
    ..rusage(
        0,
        "minflt_per_iter",
        "minor faults",
        "minor page faults per measured iteration (pages mapped in without reading from disk)",
        Unit::Count,
        |t| t.rusage.map(|r| r.minflt),
    )
};

/// Major page faults: a page read from disk, rare and dear: named from one every ten
/// iterations.
pub const MAJOR_FAULTS: Metric = Metric {
    cause_from: Some(0.1),
    ..rusage(
        1,
        "majflt_per_iter",
        "major faults",
        "major page faults per measured iteration (pages read from disk)",
        Unit::Count,
        |t| t.rusage.map(|r| r.majflt),
    )
};

/// brk: the heap top moved (glibc's main arena grows and trims with it).
pub const BRK: Metric = syscall(
    6,
    "brk_per_iter",
    "brk",
    "brk calls per iteration: the heap top moved",
    |t| t.syscalls.map(|s| s.brk),
);
/// mmap: memory mapped (a large block, or an allocator's new region).
pub const MMAP: Metric = syscall(
    7,
    "mmap_per_iter",
    "mmap",
    "mmap calls per iteration: memory mapped",
    |t| t.syscalls.map(|s| s.mmap),
);
/// munmap: memory unmapped.
pub const MUNMAP: Metric = syscall(
    8,
    "munmap_per_iter",
    "munmap",
    "munmap calls per iteration: memory unmapped",
    |t| t.syscalls.map(|s| s.munmap),
);
/// madvise: pages given back to the kernel while staying mapped (a purge).
pub const MADVISE: Metric = syscall(
    9,
    "madvise_per_iter",
    "madvise",
    "madvise calls per iteration: pages given back while staying mapped (a purge); under --thp advise also the workload's own huge-page advice",
    |t| t.syscalls.map(|s| s.madvise),
);
/// mremap: a mapping moved or resized.
pub const MREMAP: Metric = syscall(
    10,
    "mremap_per_iter",
    "mremap",
    "mremap calls per iteration: a mapping moved or resized",
    |t| t.syscalls.map(|s| s.mremap),
);

/// brk + mmap + munmap + madvise + mremap per iteration: derived from the five.
pub const MEMORY_SYSCALLS: Metric = Metric {
    index: 12,
    key: "memory_syscalls_per_iter",
    label: "memory syscalls",
    meaning: "brk + mmap + munmap + madvise + mremap per iteration",
    unit: Unit::Count,
    per: Per::Iteration,
    source: Source::Syscalls,
    cause_from: Some(0.5),
    syscall: false,
    spread: true,
    total: derived,
    scale: 1.0,
    short: "mem calls",
    ci: None,
};

/// Allocation calls through the worker's counting allocator.
pub const ALLOCS: Metric = Metric {
    index: 13,
    key: "allocs_per_iter",
    label: "allocation calls",
    meaning: "allocation calls per iteration (alloc, alloc_zeroed, realloc)",
    unit: Unit::Count,
    per: Per::Iteration,
    source: Source::Allocations,
    cause_from: None,
    syscall: false,
    spread: false,
    total: |t| t.allocations.map(|a| a.0),
    scale: 1.0,
    short: "allocs",
    ci: None,
};

/// The bytes those allocation calls asked for.
pub const ALLOC_BYTES: Metric = Metric {
    index: 14,
    key: "alloc_bytes_per_iter",
    label: "bytes allocated",
    meaning: "bytes those allocation calls asked for, per iteration",
    unit: Unit::Bytes,
    per: Per::Iteration,
    source: Source::Allocations,
    cause_from: None,
    syscall: false,
    spread: false,
    total: |t| t.allocations.map(|a| a.1),
    scale: 1.0,
    short: "alloc bytes",
    ci: None,
};

/// Faults that mapped a transparent huge page.
pub const HUGE_FAULTS: Metric = Metric {
    index: 15,
    key: "huge_faults_per_iter",
    label: "huge-page faults",
    meaning: "minor faults per iteration that mapped a transparent huge page (PMD size): 0 exactly where THP was off for the worker, else the worker's own count over the phase from the perf tracepoint kmem:mm_page_alloc with order == 9 (no other process's); empty where that tracepoint cannot be opened (not root, no tracefs, perf_event_paranoid)",
    unit: Unit::Count,
    per: Per::Iteration,
    source: Source::HugeFaults,
    cause_from: None,
    syscall: false,
    spread: false,
    total: |t| t.huge_faults.map(|h| h.faults),
    scale: 1.0,
    short: "huge flt",
    ci: None,
};

/// The bytes the minor faults mapped in: a base page for each, the huge page's size
/// for each huge-page fault. Page for page, a fault count makes an allocator on huge
/// pages look 512 times cheaper than one on 4 KiB pages that zeroes as much memory;
/// this figure compares them.
pub const FAULTED_BYTES: Metric = Metric {
    index: 16,
    key: "faulted_bytes_per_iter",
    label: "bytes faulted in",
    meaning: "bytes the minor faults mapped in per iteration: a base page (4 KiB) for each, a huge page's size for each huge-page fault; compares allocators with and without huge pages",
    unit: Unit::Bytes,
    per: Per::Iteration,
    source: Source::HugeFaults,
    cause_from: None,
    syscall: false,
    spread: true,
    total: |t| {
        let (r, h) = (t.rusage?, t.huge_faults?);
        let base = r.minflt.checked_sub(h.faults)?;
        Some(base * h.page_bytes + h.bytes)
    },
    scale: 1.0,
    short: "faulted",
    ci: None,
};

/// Every count the lab measures per iteration, in the order of summary.csv's columns.
/// An entry's `index` is its place here.
pub const METRICS: [Metric; 17] = [
    MINOR_FAULTS,
    MAJOR_FAULTS,
    rusage(
        2,
        "nvcsw_per_iter",
        "voluntary context switches",
        "voluntary context switches per iteration (the process waited)",
        Unit::Count,
        |t| t.rusage.map(|r| r.nvcsw),
    ),
    rusage(
        3,
        "nivcsw_per_iter",
        "involuntary context switches",
        "involuntary context switches per iteration (the process was preempted)",
        Unit::Count,
        |t| t.rusage.map(|r| r.nivcsw),
    ),
    rusage(
        4,
        "utime_ns_per_iter",
        "user CPU time",
        "CPU time in user mode per iteration, in ns (every thread's)",
        Unit::Ns,
        |t| t.rusage.map(|r| r.utime_ns),
    ),
    rusage(
        5,
        "stime_ns_per_iter",
        "kernel CPU time",
        "CPU time in the kernel per iteration, in ns (every thread's)",
        Unit::Ns,
        |t| t.rusage.map(|r| r.stime_ns),
    ),
    BRK,
    MMAP,
    MUNMAP,
    MADVISE,
    MREMAP,
    Metric {
        cause_from: None,
        syscall: false,
        ..syscall(
            11,
            "syscalls_per_iter",
            "syscalls",
            "syscalls of every kind per iteration (empty where the counter cannot see them all: ptrace)",
            |t| t.syscalls.and_then(|s| s.all),
        )
    },
    MEMORY_SYSCALLS,
    ALLOCS,
    ALLOC_BYTES,
    HUGE_FAULTS,
    FAULTED_BYTES,
];

/// The counts a cause is read from, in the order they are named: every registry entry
/// with a threshold but the memory syscalls' sum (a cliff's metric; a cause is named
/// by the call that moved).
pub const COUNTS: [Metric; 7] = [
    MINOR_FAULTS,
    MAJOR_FAULTS,
    BRK,
    MMAP,
    MUNMAP,
    MADVISE,
    MREMAP,
];

impl Metric {
    /// Whether a change of `d` (per iteration) is worth naming.
    pub fn named(&self, d: f64) -> bool {
        self.cause_from.is_some_and(|t| d.abs() >= t)
    }

    /// The threshold of [`Metric::named`]; infinite for a count never named.
    pub fn named_from(&self) -> f64 {
        self.cause_from.unwrap_or(f64::INFINITY)
    }

    /// The column of the lowest process's figure (summary rows of several processes).
    pub fn min_key(&self) -> String {
        format!("{}_min", self.key)
    }

    /// The column of the highest process's figure.
    pub fn max_key(&self) -> String {
        format!("{}_max", self.key)
    }

    /// A figure of this entry in words, in its unit: "1.2 ms", "4,100", "27.6 MiB" (a
    /// count rounded to a whole one).
    pub fn show(&self, v: f64) -> String {
        use crate::fmt::{fmt_count, fmt_ns, human_bytes};
        match self.unit {
            Unit::Count => fmt_count(v.round()),
            Unit::Ns => fmt_ns(v),
            Unit::Ms => fmt_ns(v * 1e6),
            Unit::Bytes => human_bytes(v.max(0.0) as u64),
            Unit::Mib => human_bytes((v * self.scale).max(0.0) as u64),
        }
    }

    /// Its key without what it is per: `minflt` of `minflt_per_iter` (a sweep's column).
    pub fn stem(&self) -> &'static str {
        self.key.strip_suffix("_per_iter").unwrap_or(self.key)
    }

    /// Its label with what it is counted per: "minor faults per iteration".
    pub fn per_label(&self) -> String {
        match self.per {
            Per::Iteration => format!("{} per iteration", self.label),
            Per::Run => format!("{} per run", self.label),
            Per::Process => self.label.to_string(),
        }
    }
}

/// A figure of one run of a user's command (exec, tune, sweep, cliff): its total over the
/// run in the entry's unit.
#[allow(clippy::too_many_arguments)]
const fn per_run(
    index: usize,
    key: &'static str,
    label: &'static str,
    short: &'static str,
    meaning: &'static str,
    source: Source,
    total: fn(&SourceTotals) -> Option<u64>,
    ci: Option<(&'static str, &'static str)>,
) -> Metric {
    Metric {
        index,
        key,
        label,
        meaning,
        unit: Unit::Count,
        per: Per::Run,
        source,
        cause_from: None,
        syscall: matches!(source, Source::Syscalls),
        spread: matches!(source, Source::Syscalls),
        total,
        scale: 1.0,
        short,
        ci,
    }
}

/// A memory syscall's count of one run, labelled "<key> calls", under CI's `<key>-calls`.
const fn run_calls(
    index: usize,
    key: &'static str,
    label: &'static str,
    meaning: &'static str,
    ci: &'static str,
    total: fn(&SourceTotals) -> Option<u64>,
) -> Metric {
    per_run(
        index,
        key,
        label,
        key,
        meaning,
        Source::Syscalls,
        total,
        Some((ci, "calls")),
    )
}

/// Every figure the lab gives per run of a user's command, medians over the runs, in the
/// order of exec.csv's columns (`user_ms` … `syscalls`). An entry's `index` is its place
/// here.
pub const RUN_METRICS: [Metric; 13] = [
    Metric {
        unit: Unit::Ms,
        scale: 1e6,
        cause_from: Some(1.0),
        ..per_run(
            0,
            "user_ms",
            "user CPU time",
            "user",
            "CPU time in user mode of one run, in ms (the command and its children)",
            Source::Rusage,
            |t| t.rusage.map(|r| r.utime_ns),
            None,
        )
    },
    Metric {
        unit: Unit::Ms,
        scale: 1e6,
        ..per_run(
            1,
            "sys_ms",
            "kernel CPU time",
            "sys",
            "CPU time in the kernel of one run, in ms (the command and its children)",
            Source::Rusage,
            |t| t.rusage.map(|r| r.stime_ns),
            None,
        )
    },
    Metric {
        cause_from: Some(2.0),
        spread: true,
        ..per_run(
            2,
            "minflt",
            "minor faults",
            "minflt",
            "minor page faults of one run (the command and its children)",
            Source::Rusage,
            |t| t.rusage.map(|r| r.minflt),
            Some(("minor-faults", "faults")),
        )
    },
    per_run(
        3,
        "majflt",
        "major faults",
        "majflt",
        "major page faults of one run (pages read from disk)",
        Source::Rusage,
        |t| t.rusage.map(|r| r.majflt),
        None,
    ),
    per_run(
        4,
        "voluntary_csw",
        "voluntary context switches",
        "vcsw",
        "voluntary context switches of one run (the program waited)",
        Source::Rusage,
        |t| t.rusage.map(|r| r.nvcsw),
        None,
    ),
    per_run(
        5,
        "involuntary_csw",
        "involuntary context switches",
        "ivcsw",
        "involuntary context switches of one run (the program was preempted)",
        Source::Rusage,
        |t| t.rusage.map(|r| r.nivcsw),
        None,
    ),
    Metric {
        unit: Unit::Mib,
        scale: (1u64 << 20) as f64,
        cause_from: Some(0.25),
        spread: true,
        ..per_run(
            6,
            "peak_rss_mib",
            "peak RSS",
            "peak RSS",
            "the peak resident set of one run (getrusage's ru_maxrss)",
            Source::Rusage,
            |t| t.peak_rss,
            Some(("peak-rss", "bytes")),
        )
    },
    run_calls(
        7,
        "brk",
        "brk calls",
        "brk calls of one run",
        "brk-calls",
        |t| t.syscalls.map(|s| s.brk),
    ),
    run_calls(
        8,
        "mmap",
        "mmap calls",
        "mmap calls of one run",
        "mmap-calls",
        |t| t.syscalls.map(|s| s.mmap),
    ),
    run_calls(
        9,
        "munmap",
        "munmap calls",
        "munmap calls of one run",
        "munmap-calls",
        |t| t.syscalls.map(|s| s.munmap),
    ),
    run_calls(
        10,
        "madvise",
        "madvise calls",
        "madvise calls of one run",
        "madvise-calls",
        |t| t.syscalls.map(|s| s.madvise),
    ),
    run_calls(
        11,
        "mremap",
        "mremap calls",
        "mremap calls of one run",
        "mremap-calls",
        |t| t.syscalls.map(|s| s.mremap),
    ),
    Metric {
        syscall: false,
        spread: false,
        ..per_run(
            12,
            "syscalls",
            "syscalls",
            "syscalls",
            "syscalls of every kind in one run (empty where the counter cannot see them all: ptrace)",
            Source::Syscalls,
            |t| t.syscalls.and_then(|s| s.all),
            None,
        )
    },
];

/// A run's CPU time in the kernel, in ms.
pub const RUN_SYS_TIME: Metric = RUN_METRICS[1];
/// A run's minor faults.
pub const RUN_MINOR_FAULTS: Metric = RUN_METRICS[2];
/// A run's peak resident set, in MiB.
pub const RUN_PEAK_RSS: Metric = RUN_METRICS[6];
/// A run's brk calls.
pub const RUN_BRK: Metric = RUN_METRICS[7];
/// A run's mmap calls.
pub const RUN_MMAP: Metric = RUN_METRICS[8];
/// A run's munmap calls.
pub const RUN_MUNMAP: Metric = RUN_METRICS[9];
/// A run's madvise calls.
pub const RUN_MADVISE: Metric = RUN_METRICS[10];

/// A run's mremap calls.
pub const RUN_MREMAP: Metric = RUN_METRICS[11];

/// The per-run entries a run-against-run difference is read from: faults and the memory
/// syscalls, keyed `<key>_per_run` in findings.json.
pub const RUN_COUNTS: [Metric; 7] = [
    RUN_METRICS[2],
    RUN_METRICS[3],
    RUN_METRICS[7],
    RUN_METRICS[8],
    RUN_METRICS[9],
    RUN_METRICS[10],
    RUN_METRICS[11],
];

/// A figure of a process's memory over its life, in bytes, from the driver's samples.
const fn memory(
    index: usize,
    key: &'static str,
    label: &'static str,
    short: &'static str,
    meaning: &'static str,
    total: fn(&SourceTotals) -> Option<u64>,
) -> Metric {
    Metric {
        index,
        key,
        label,
        meaning,
        unit: Unit::Bytes,
        per: Per::Process,
        source: Source::Memory,
        cause_from: None,
        syscall: false,
        spread: false,
        total,
        scale: 1.0,
        short,
        ci: None,
    }
}

/// Every figure of a process's memory over time (a worker's, or one run of a user's
/// command), sampled from outside it every few ms: in the run records, summary.csv and
/// exec.csv, after the other figures. Medians over a cell's processes or a command's
/// runs.
pub const MEMORY_METRICS: [Metric; 8] = [
    Metric {
        spread: true,
        ..memory(
        0,
        "mem_peak_bytes",
        "peak resident memory (sampled)",
        "mem peak",
        "the highest resident set (Rss) sampled over the process's life, bytes",
        |t| t.memory.map(|m| m.peak),
    )
    },
    Metric {
        spread: true,
        ..memory(
        1,
        "mem_mean_bytes",
        "mean resident memory",
        "mem mean",
        "the resident set averaged over the process's life (each sample weighted by how long it held), bytes",
        |t| t.memory.map(|m| m.mean),
    )
    },
    Metric {
        spread: true,
        ..memory(
        2,
        "mem_last_bytes",
        "resident memory at the end",
        "mem end",
        "the resident set at the last sample before the process ended: what it still held, bytes",
        |t| t.memory.map(|m| m.last),
    )
    },
    memory(
        3,
        "huge_mean_bytes",
        "memory in huge pages",
        "huge mean",
        "anonymous memory in transparent huge pages (AnonHugePages), averaged as the mean is, bytes",
        |t| t.memory.and_then(|m| m.huge_mean),
    ),
    memory(
        4,
        "freed_bytes",
        "resident memory once every buffer was freed",
        "freed",
        "with an idle phase after the burst (budget idle_time): the resident set at its first sample, every buffer freed by then, bytes",
        |t| t.memory.and_then(|m| m.freed),
    ),
    Metric {
        unit: Unit::Ms,
        scale: 1e3,
        ..memory(
            5,
            "half_returned_ms",
            "time until half was given back",
            "half back",
            "with an idle phase: ms from its start to the first sample at which half of what the process grew by during the burst (its first sample to its highest) had been given back; empty where it never was (kept until exit)",
            |t| t.memory.and_then(|m| m.half_returned_us),
        )
    },
    Metric {
        unit: Unit::Count,
        scale: 100.0,
        ..memory(
            6,
            "huge_coverage_pct",
            "huge-page coverage (% of Rss)",
            "huge %",
            "the share of the resident set in transparent huge pages (AnonHugePages over Rss, each averaged over time across the samples that read both), percent",
            |t| t.memory.and_then(|m| m.huge_share_bp),
        )
    },
    memory(
        7,
        "mem_hwm_bytes",
        "peak resident memory (kernel's high-water mark)",
        "mem hwm",
        "the kernel's high-water mark of the resident set (VmHWM of /proc/<pid>/status), read by the worker itself just before it wrote its record and exited: the peak between two samples included, bytes; empty for a user's command (its peak is wait4's ru_maxrss, peak_rss_mib)",
        |t| t.memory.and_then(|m| m.hwm),
    ),
];

/// A process's highest sampled resident set.
pub const MEM_PEAK: Metric = MEMORY_METRICS[0];
/// A process's time-weighted mean resident set.
pub const MEM_MEAN: Metric = MEMORY_METRICS[1];
/// A process's resident set at its last sample.
pub const MEM_LAST: Metric = MEMORY_METRICS[2];
/// A process's mean memory in transparent huge pages.
pub const HUGE_MEAN: Metric = MEMORY_METRICS[3];
/// A process's resident set once its idle phase began, every buffer freed.
pub const FREED: Metric = MEMORY_METRICS[4];
/// How long into its idle phase until half its growth was given back.
pub const HALF_RETURNED: Metric = MEMORY_METRICS[5];
/// The share of a process's resident set in transparent huge pages, percent.
pub const HUGE_COVERAGE: Metric = MEMORY_METRICS[6];
/// A process's high-water mark of its resident set, as the kernel kept it (VmHWM).
pub const MEM_HWM: Metric = MEMORY_METRICS[7];

/// The most entries a registry holds (the room a [`Figures`] has).
const ROOM: usize = 17;

/// A list of entries that figures are kept by: per iteration ([`METRICS`]) or per run
/// ([`RUN_METRICS`]).
pub trait Registry: Clone + Copy + fmt::Debug + Default + PartialEq {
    /// Its entries, each at its `index`.
    const LIST: &'static [Metric];
    /// What its entries are counted per (an entry of another list is refused).
    const PER: Per;
    /// The entry after which the syscall counter's name is serialised, where it is.
    const COUNTER_AFTER: Option<usize>;
    /// The entry that is the sum of the memory syscalls, where there is one.
    const SUM: Option<usize>;
    /// Whether its figures in bytes are whole: serialised rounded, as integers.
    const WHOLE: bool = false;
}

/// The per-iteration registry, [`METRICS`]: a run record's and a cell summary's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerIteration;

impl Registry for PerIteration {
    const LIST: &'static [Metric] = &METRICS;
    const PER: Per = Per::Iteration;
    const COUNTER_AFTER: Option<usize> = Some(MEMORY_SYSCALLS.index);
    const SUM: Option<usize> = Some(MEMORY_SYSCALLS.index);
}

/// The per-run registry, [`RUN_METRICS`]: a user's command's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerRun;

impl Registry for PerRun {
    const LIST: &'static [Metric] = &RUN_METRICS;
    const PER: Per = Per::Run;
    const COUNTER_AFTER: Option<usize> = None;
    const SUM: Option<usize> = None;
}

/// The memory registry, [`MEMORY_METRICS`]: a process's memory over its life.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerProcess;

impl Registry for PerProcess {
    const LIST: &'static [Metric] = &MEMORY_METRICS;
    const PER: Per = Per::Process;
    const COUNTER_AFTER: Option<usize> = None;
    const SUM: Option<usize> = None;
    const WHOLE: bool = true;
}

/// One figure per entry of a registry (None where it was not read): per iteration, what
/// a run record and a summary row carry; per run ([`RunFigures`]), what an exec row and a
/// sweep point carry. Serialised flat, one field per entry under its key (`null` where
/// None), per iteration with the syscall counter's name (`syscall_counter`) after the
/// syscall counts, as summary.csv has always had its columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures<R: Registry = PerIteration> {
    values: [Option<f64>; ROOM],
    /// Which method counted the syscalls: "perf" or "ptrace"; None when none did.
    pub syscall_counter: Option<String>,
    registry: std::marker::PhantomData<R>,
}

/// The figures of one run of a user's command (or their medians over runs).
pub type RunFigures = Figures<PerRun>;

/// The figures of a process's memory over its life (or their medians).
pub type MemoryFigures = Figures<PerProcess>;

impl MemoryFigures {
    /// The figures of one process's memory samples (all None without samples); with
    /// `idle_ms`, the start of its idle phase on the samples' clock, those of the idle
    /// phase too.
    pub fn of_samples(
        samples: &[crate::model::memory::MemorySample],
        idle_ms: Option<f64>,
    ) -> Self {
        use crate::model::memory::MemorySummary;
        Figures::of_totals(&SourceTotals {
            memory: match idle_ms {
                Some(ms) => MemorySummary::with_idle(samples, ms),
                None => MemorySummary::of(samples),
            },
            ..SourceTotals::default()
        })
    }

    /// Whether any figure was read.
    pub fn any(&self) -> bool {
        self.iter().any(|(_, v)| v.is_some())
    }
}

impl<R: Registry> std::ops::Index<Metric> for Figures<R> {
    type Output = Option<f64>;
    fn index(&self, m: Metric) -> &Option<f64> {
        assert!(
            m.per == R::PER,
            "{} is not an entry of this registry",
            m.key
        );
        &self.values[m.index]
    }
}

impl<R: Registry> std::ops::IndexMut<Metric> for Figures<R> {
    fn index_mut(&mut self, m: Metric) -> &mut Option<f64> {
        assert!(
            m.per == R::PER,
            "{} is not an entry of this registry",
            m.key
        );
        &mut self.values[m.index]
    }
}

impl Figures<PerIteration> {
    /// Each figure of `totals` over `iterations` (a phase of no iterations divides by
    /// one); memory syscalls derived from the five.
    pub fn per_iteration(totals: &SourceTotals, iterations: u64) -> Self {
        Figures::over(totals, iterations.max(1) as f64)
    }

    /// Replaces the figures of one source with those of `totals` over `iterations`
    /// (another pass's counts); the others stay.
    pub fn replace_source(&mut self, source: Source, totals: &SourceTotals, iterations: u64) {
        let other = Figures::per_iteration(totals, iterations);
        for m in METRICS.iter().filter(|m| m.source == source) {
            self.values[m.index] = other.values[m.index];
        }
        self.derive();
    }
}

impl Figures<PerRun> {
    /// The figures of one run's `totals`, each in its entry's unit.
    pub fn of_run(totals: &SourceTotals) -> Self {
        Figures::over(totals, 1.0)
    }
}

impl<R: Registry> Figures<R> {
    /// Each entry's total in `totals`, in its unit (over its scale, not divided by
    /// iterations): one run's figures by this registry.
    pub fn of_totals(totals: &SourceTotals) -> Self {
        Figures::over(totals, 1.0)
    }

    /// Each entry's figure from `f` of this and `other`'s (None where `f` gives none);
    /// the sum derived again.
    pub fn zip(&self, other: &Self, f: impl Fn(f64, f64) -> Option<f64>) -> Self {
        let mut out = Figures::each(|m| f(self[m]?, other[m]?));
        out.derive();
        out
    }

    /// Each figure over `d`.
    pub fn divided(&self, d: f64) -> Self {
        self.zip(self, |a, _| Some(a / d))
    }

    /// Each entry's total in `totals` over `divisor` and the entry's scale; the sum
    /// derived.
    fn over(totals: &SourceTotals, divisor: f64) -> Self {
        let mut f = Figures::default();
        for m in R::LIST {
            f.values[m.index] = (m.total)(totals).map(|v| v as f64 / m.scale / divisor);
        }
        f.derive();
        f
    }

    /// The memory syscalls' sum (brk + mmap + munmap + madvise + mremap) where all five
    /// were counted.
    pub fn memory_calls(&self) -> Option<f64> {
        R::LIST
            .iter()
            .filter(|m| m.syscall)
            .map(|m| self.values[m.index])
            .sum()
    }

    /// Sets the derived figures from the others: memory syscalls are the sum of the five
    /// where all five were counted.
    pub fn derive(&mut self) {
        if let Some(i) = R::SUM {
            self.values[i] = self.memory_calls();
        }
    }

    /// These figures with `counter` as the method that counted the syscalls.
    pub fn counted_by(self, counter: Option<String>) -> Self {
        Figures {
            syscall_counter: counter,
            ..self
        }
    }

    /// Each entry's figure from `f` (e.g. the median of the processes'); no syscall
    /// counter named.
    pub fn each(f: impl Fn(Metric) -> Option<f64>) -> Self {
        let mut out = Figures::default();
        for m in R::LIST {
            out.values[m.index] = f(*m);
        }
        out
    }

    /// Each entry with its figure, in the registry's order.
    pub fn iter(&self) -> impl Iterator<Item = (Metric, Option<f64>)> + '_ {
        R::LIST.iter().map(|m| (*m, self.values[m.index]))
    }
}

impl<R: Registry> Serialize for Figures<R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for m in R::LIST {
            match self.values[m.index] {
                Some(v) if R::WHOLE && m.unit == Unit::Bytes && v.is_finite() && v >= 0.0 => {
                    map.serialize_entry(m.key, &(v.round() as u64))?
                }
                // A figure from whole µs (ms) or hundredths of a percent: to that
                // resolution, not a binary fraction's tail.
                Some(v) if R::WHOLE && m.scale > 1.0 && v.is_finite() => {
                    map.serialize_entry(m.key, &((v * m.scale).round() / m.scale))?
                }
                v => map.serialize_entry(m.key, &v)?,
            }
            if R::COUNTER_AFTER == Some(m.index) {
                map.serialize_entry("syscall_counter", &self.syscall_counter)?;
            }
        }
        map.end()
    }
}

impl<'de, R: Registry> Deserialize<'de> for Figures<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<R>(std::marker::PhantomData<R>);
        impl<'de, R: Registry> Visitor<'de> for V<R> {
            type Value = Figures<R>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the figures of a registry")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Figures<R>, A::Error> {
                let mut f = Figures::default();
                let mut sum_given = false;
                while let Some(k) = a.next_key::<String>()? {
                    if k == "syscall_counter" && R::COUNTER_AFTER.is_some() {
                        f.syscall_counter = a.next_value()?;
                    } else if let Some(m) = R::LIST.iter().find(|m| m.key == k) {
                        sum_given |= R::SUM == Some(m.index);
                        // The column named in the error: a cell of a row file.
                        f.values[m.index] = a
                            .next_value::<Lenient>()
                            .map_err(|e| serde::de::Error::custom(format!("column {k}: {e}")))?
                            .0;
                    } else {
                        a.next_value::<IgnoredAny>()?;
                    }
                }
                // Records from before the registry kept no memory-syscall figure: it is
                // the five's sum. One given empty stays empty.
                if R::SUM.is_some() && !sum_given {
                    f.derive();
                }
                Ok(f)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A figure as a row file gives it: a number, null, or (a CSV cell read through a
/// flattened row) the number's text, empty for none.
struct Lenient(Option<f64>);

impl<'de> Deserialize<'de> for Lenient {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Lenient;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number, null or empty")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Lenient, E> {
                Ok(Lenient(Some(v as f64)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Lenient, E> {
                let v = v.trim();
                if v.is_empty() {
                    return Ok(Lenient(None));
                }
                v.parse()
                    .map(|x| Lenient(Some(x)))
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Lenient, E> {
                Ok(Lenient(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Lenient, D::Error> {
                d.deserialize_any(V)
            }
        }
        d.deserialize_any(V)
    }
}

/// The change of each registry entry with a `spread` between two sides (new − base),
/// serialised flat as `<key>_change`: what a diff says moved besides the time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Changes(pub Figures);

impl Changes {
    /// `new` − `base` for each entry with a `spread`, where both have it.
    pub fn between(base: &Figures, new: &Figures) -> Self {
        Changes(Figures::each(|m| {
            m.spread.then_some(()).and(Some(new[m]? - base[m]?))
        }))
    }

    /// The entries it gives, with their changes.
    pub fn iter(&self) -> impl Iterator<Item = (Metric, Option<f64>)> + '_ {
        METRICS
            .iter()
            .filter(|m| m.spread)
            .map(|m| (*m, self.0[*m]))
    }
}

impl Serialize for Changes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_spread_entries(&self.0, "_change", s)
    }
}

/// The figures of the registry entries with a `spread` (faults, memory syscalls),
/// serialised flat under their keys: what a cliff's side gives besides its value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpreadEntries(pub Figures);

impl Serialize for SpreadEntries {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_spread_entries(&self.0, "", s)
    }
}

/// `figures`' entries with a `spread`, each as `<key><suffix>`.
fn serialize_spread_entries<S: Serializer>(
    figures: &Figures,
    suffix: &str,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(None)?;
    for m in METRICS.iter().filter(|m| m.spread) {
        map.serialize_entry(&format!("{}{suffix}", m.key), &figures[*m])?;
    }
    map.end()
}

/// The per-iteration entries a command's sweep gives per call (or run), in its
/// columns' order: faults and the memory syscalls' sum (the entries with a spread, whose
/// spread over the rounds it gives too), then four of the calls.
pub const PER_CALL: [Metric; 6] = [MINOR_FAULTS, MEMORY_SYSCALLS, BRK, MMAP, MUNMAP, MADVISE];

/// The per-iteration entries a built-in cell's trace gives for every iteration of its
/// timeline, in its columns' order (by stem: `minflt`, `brk`, …): the faults (from the
/// worker's getrusage around each iteration) and each memory syscall (from perf's
/// events in its span).
pub const TIMELINE: [Metric; 6] = [MINOR_FAULTS, BRK, MMAP, MUNMAP, MADVISE, MREMAP];

/// A sweep point's figures per call (keyed by the per-iteration registry: one call is an
/// iteration of the command) and their spread over the rounds; serialised flat as each
/// [`PER_CALL`] entry's stem (`minflt`, `memory_syscalls`, `brk`, …), then
/// `<stem>_noise` for those with a spread.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallFigures {
    /// Per call (or run), medians over the rounds.
    pub value: Figures,
    /// max − min over the rounds: what a change must exceed to be one.
    pub noise: Figures,
}

impl Serialize for CallFigures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for m in PER_CALL {
            map.serialize_entry(m.stem(), &self.value[m])?;
        }
        for m in PER_CALL.iter().filter(|m| m.spread) {
            map.serialize_entry(&format!("{}_noise", m.stem()), &self.noise[*m])?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for CallFigures {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CallFigures;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a sweep point's figures")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<CallFigures, A::Error> {
                let mut f = CallFigures::default();
                while let Some(k) = a.next_key::<String>()? {
                    let (stem, noise) = match k.strip_suffix("_noise") {
                        Some(stem) => (stem, true),
                        None => (k.as_str(), false),
                    };
                    let column = |e: A::Error| serde::de::Error::custom(format!("column {k}: {e}"));
                    match PER_CALL.iter().find(|m| m.stem() == stem) {
                        Some(m) if noise => {
                            f.noise[*m] = a.next_value::<Lenient>().map_err(column)?.0
                        }
                        Some(m) => f.value[*m] = a.next_value::<Lenient>().map_err(column)?.0,
                        None => {
                            a.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(f)
            }
        }
        d.deserialize_map(V)
    }
}

/// The interval of the median over a cell's processes (or a command's runs) of each
/// memory entry with a `spread` (peak, mean and last resident memory), at the cell's level: serialised flat as
/// `<stem>_ci_low_bytes` and `<stem>_ci_high_bytes` (`mem_mean_ci_low_bytes`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryIntervals {
    /// The intervals' lower ends.
    pub low: MemoryFigures,
    /// Their upper ends.
    pub high: MemoryFigures,
}

impl MemoryIntervals {
    /// The columns of entry `m`'s interval.
    pub fn keys(m: &Metric) -> (String, String) {
        let stem = m.key.strip_suffix("_bytes").unwrap_or(m.key);
        (
            format!("{stem}_ci_low_bytes"),
            format!("{stem}_ci_high_bytes"),
        )
    }
}

impl Serialize for MemoryIntervals {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        let whole = |v: Option<f64>| v.map(|v| v.round() as u64);
        for m in MEMORY_METRICS.iter().filter(|m| m.spread) {
            let (low, high) = MemoryIntervals::keys(m);
            map.serialize_entry(&low, &whole(self.low[*m]))?;
            map.serialize_entry(&high, &whole(self.high[*m]))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for MemoryIntervals {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MemoryIntervals;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the memory figures' intervals")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<MemoryIntervals, A::Error> {
                let mut out = MemoryIntervals::default();
                while let Some(k) = a.next_key::<String>()? {
                    let hit = MEMORY_METRICS.iter().filter(|m| m.spread).find_map(|m| {
                        let (low, high) = MemoryIntervals::keys(m);
                        (k == low)
                            .then_some((*m, true))
                            .or((k == high).then_some((*m, false)))
                    });
                    match hit {
                        Some((m, is_low)) => {
                            let v = a
                                .next_value::<Lenient>()
                                .map_err(|e| serde::de::Error::custom(format!("column {k}: {e}")))?
                                .0;
                            if is_low {
                                out.low[m] = v;
                            } else {
                                out.high[m] = v;
                            }
                        }
                        None => {
                            a.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// The lowest and highest process's figure of each registry entry with a `spread`:
/// serialised flat as `<key>_min` and `<key>_max`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spread {
    /// The lowest process's figures.
    pub min: Figures,
    /// The highest process's figures.
    pub max: Figures,
}

impl Serialize for Spread {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for m in METRICS.iter().filter(|m| m.spread) {
            map.serialize_entry(&m.min_key(), &self.min[*m])?;
            map.serialize_entry(&m.max_key(), &self.max[*m])?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_sits_at_its_index_under_its_own_column() {
        for (i, m) in METRICS.iter().enumerate() {
            assert_eq!(m.index, i, "{}", m.key);
            assert!(m.key.ends_with("_per_iter"), "{}", m.key);
        }
        let mut keys: Vec<&str> = METRICS.iter().map(|m| m.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), METRICS.len(), "a column named twice");
    }

    #[test]
    fn the_causes_are_the_entries_with_a_threshold() {
        let with: Vec<&str> = METRICS
            .iter()
            .filter(|m| m.cause_from.is_some() && m.index != MEMORY_SYSCALLS.index)
            .map(|m| m.key)
            .collect();
        assert_eq!(with, COUNTS.map(|m| m.key));
        for m in COUNTS {
            let t = m.cause_from.unwrap();
            assert!(t > 0.0, "{}: a threshold of 0 names noise", m.key);
            assert!(!m.named(t * 0.99) && m.named(-t));
        }
        assert!(
            !METRICS[2].named(1e9),
            "a count without a threshold is never named"
        );
    }

    #[test]
    fn figures_divide_their_sources_totals_and_derive_memory_syscalls() {
        let totals = SourceTotals {
            rusage: Some(Rusage {
                minflt: 400,
                nvcsw: 4,
                nivcsw: 2,
                utime_ns: 8_000,
                stime_ns: 12_000,
                ..Default::default()
            }),
            syscalls: Some(SyscallCounts {
                brk: 8,
                mmap: 4,
                munmap: 4,
                madvise: 0,
                mremap: 0,
                all: None,
            }),
            allocations: None,
            peak_rss: None,
            memory: None,
            // 3 of the 400 faults mapped a 2 MiB page each.
            huge_faults: Some(crate::model::counts::HugeFaults {
                faults: 3,
                bytes: 3 << 21,
                page_bytes: 4096,
            }),
        };
        let f = Figures::per_iteration(&totals, 4);
        assert_eq!(f[MINOR_FAULTS], Some(100.0));
        assert_eq!(f[HUGE_FAULTS], Some(0.75));
        assert_eq!(
            f[FAULTED_BYTES],
            Some((397.0 * 4096.0 + 3.0 * 2097152.0) / 4.0)
        );
        assert_eq!(f[BRK], Some(2.0));
        assert_eq!(f[MEMORY_SYSCALLS], Some(4.0));
        assert_eq!(f[METRICS[11]], None, "all syscalls not seen");
        assert_eq!(f[METRICS[13]], None, "allocations not counted");
        let none = Figures::per_iteration(&SourceTotals::default(), 0);
        assert_eq!(none[MEMORY_SYSCALLS], None, "no sum of counts not read");
    }

    #[test]
    fn figures_serialise_under_the_summary_columns_and_read_back() {
        let mut f = Figures::each(|m| Some(m.index as f64));
        f.syscall_counter = Some("perf".into());
        let v = serde_json::to_value(&f).unwrap();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "minflt_per_iter",
                "majflt_per_iter",
                "nvcsw_per_iter",
                "nivcsw_per_iter",
                "utime_ns_per_iter",
                "stime_ns_per_iter",
                "brk_per_iter",
                "mmap_per_iter",
                "munmap_per_iter",
                "madvise_per_iter",
                "mremap_per_iter",
                "syscalls_per_iter",
                "memory_syscalls_per_iter",
                "syscall_counter",
                "allocs_per_iter",
                "alloc_bytes_per_iter",
                "huge_faults_per_iter",
                "faulted_bytes_per_iter",
            ]
        );
        let back: Figures = serde_json::from_value(v).unwrap();
        assert_eq!(back, f);
        // A record from before the registry: no memory-syscall figure, an unknown key.
        let old: Figures = serde_json::from_str(
            r#"{"brk_per_iter":1,"mmap_per_iter":2,"munmap_per_iter":3,"madvise_per_iter":0,"mremap_per_iter":0,"other":[1]}"#,
        )
        .unwrap();
        assert_eq!(old[MEMORY_SYSCALLS], Some(6.0));
        assert_eq!(old[MINOR_FAULTS], None);
        // A sum given empty is not made up from the five; a cell that is no number is
        // refused with its column named.
        let empty: Figures = serde_json::from_str(
            r#"{"brk_per_iter":1,"mmap_per_iter":2,"munmap_per_iter":3,"madvise_per_iter":0,"mremap_per_iter":0,"memory_syscalls_per_iter":null}"#,
        )
        .unwrap();
        assert_eq!(empty[MEMORY_SYSCALLS], None);
        let bad = serde_json::from_str::<Figures>(r#"{"brk_per_iter":"abc"}"#).unwrap_err();
        assert!(bad.to_string().contains("column brk_per_iter"), "{bad}");
    }
}
