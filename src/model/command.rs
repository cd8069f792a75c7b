//! A command's measurements as plain data: every run of every allocator, as `exec.json`
//! keeps them (written by [`crate::engine::command`], read by analysis and export).

use crate::model::counts::{Rusage, SyscallCounts};
use crate::model::metric::{RunFigures, SourceTotals};
use crate::model::spec::Thp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One measured run (only runs that exited with status 0 are kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecRun {
    /// 1-based round; warm-ups are not recorded.
    pub round: u32,
    /// Its place in that round's shuffled order (0-based; absent in records written
    /// before rounds were shuffled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u32>,
    /// From just before the command was released to exec until `wait4` reaped it, in ns.
    pub wall_ns: u64,
    /// When the run began (the start of `wall_ns`), on the wall clock in ns since the Unix
    /// epoch: its interval in `histograms/<allocator>.ns.hlog`. Absent in records written
    /// before the lab kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_ns: Option<u64>,
    /// From `wait4` on this run's process (its waited-for descendants included).
    pub usage: Rusage,
    /// brk/mmap/munmap/madvise/mremap and all syscalls of the whole process tree.
    pub syscalls: Option<SyscallCounts>,
    /// The command's own process's memory, sampled by the driver while it ran, in time
    /// order (its children are not in it); empty where it was not sampled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory: Vec<crate::model::memory::MemorySample>,
    /// Why there are no memory samples, where there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_unavailable: Option<String>,
    /// When the command said its burst was over (wrote to the descriptor named in
    /// `ALLOCLAB_MARK_FD`), in ms on its samples' clock: the samples after it are its
    /// idle phase (`freed_bytes`, `half_returned_ms`). None where it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_from_ms: Option<f64>,
    /// The random part of this run's environment padding, in bytes
    /// ([`crate::model::layout::PAD_ENV`]: its stack offset; the fixed part gives every
    /// allocator's environment one length). Absent in records written before the lab
    /// drew one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_pad_bytes: Option<u32>,
}

impl ExecRun {
    /// This run's figures, by the per-run registry.
    pub fn figures(&self) -> RunFigures {
        RunFigures::of_run(&SourceTotals::of_run(&self.usage, self.syscalls))
    }

    /// This run's memory figures, from its samples (all None without samples).
    pub fn memory_figures(&self) -> crate::model::metric::MemoryFigures {
        crate::model::metric::MemoryFigures::of_samples(&self.memory, self.idle_from_ms)
    }
}

/// Everything about one allocator's runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AllocatorRuns {
    /// The row's label: the allocator spec as given (knobs included), plus the command's
    /// name or suffix where the session runs more than one command.
    pub allocator: String,
    /// The preloaded library (absolute path), or None for glibc.
    pub preload: Option<String>,
    /// The allocator variables set for the command (LD_PRELOAD and knobs).
    pub env: BTreeMap<String, String>,
    /// Where the probe found `malloc` defined under this environment.
    pub malloc_from: Option<String>,
    /// The allocator's version as the probe read it from the library; None where it was not read.
    pub version: Option<String>,
    /// Knobs as the allocator reports them.
    pub knobs_effective: BTreeMap<String, String>,
    /// Why this allocator's row failed (its remaining runs were skipped).
    pub failure: Option<String>,
    /// How many warm-up runs completed (their measurements are not kept).
    pub warmup_runs: u32,
    /// The measured runs, in the order they ran.
    pub runs: Vec<ExecRun>,
    /// With `--counters ptrace`: the memory-syscall counts of the extra traced run.
    #[serde(default)]
    pub traced_syscalls: Option<SyscallCounts>,
    /// Why the traced run has no counts (records written before `traced_run` existed
    /// also kept here how much slower it was).
    #[serde(default)]
    pub traced_note: Option<String>,
    /// With `--counters ptrace`: the traced run's own wall time and rusage, which the
    /// summary sets against the untraced runs' to say whether it behaved like them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traced_run: Option<TracedRun>,
    /// In a session of several commands (`exec -c … -c …`): which of the record's
    /// `commands` this row ran (its label is the allocator's with the command's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_index: Option<usize>,
    /// What its memory syscalls and faults did, from one more run recorded with their
    /// arguments ([`crate::model::evidence`]), or why there is no recording; None in
    /// records from before the lab recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::model::evidence::Recorded>,
    /// The allocator library the program links itself (`libjemalloc.so.2`), on a `system`
    /// row: glibc's shim was preloaded over it, so that glibc's malloc served the runs
    /// ([`AllocatorRuns::own_allocator_note`]). None where the program links none, and in
    /// records from before the lab looked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_allocator: Option<String>,
}

impl AllocatorRuns {
    /// What a row whose program links its own allocator library ran, in one sentence
    /// (`program` the program's name as the command gives it).
    pub fn own_allocator_note(&self, program: &str) -> Option<String> {
        let own = self.own_allocator.as_deref()?;
        let name = program.rsplit('/').next().unwrap_or(program);
        Some(format!(
            "{name} links {own} itself: {} preloads alloclab's glibc shim so that glibc's malloc serves it; to measure the program as shipped, name its library ({own}) as an allocator",
            self.allocator
        ))
    }
}

/// What the extra traced run measured besides its counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TracedRun {
    /// From just before the command was released to exec until `wait4` reaped it, in ns (slowed
    /// by the tracer, so not a measurement of the command).
    pub wall_ns: u64,
    /// From `wait4`, as an untraced run's.
    pub usage: Rusage,
}

impl TracedRun {
    /// The traced run's figures with `syscalls` its counts.
    pub fn figures(&self, syscalls: Option<SyscallCounts>) -> RunFigures {
        RunFigures::of_run(&SourceTotals::of_run(&self.usage, syscalls))
    }
}

/// The whole `exec` result, as `--out DIR` stores it (`exec.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecRecord {
    /// The record format, [`SCHEMA`].
    pub schema: String,
    /// The command and its arguments as given (the first command in a session of several).
    pub command: Vec<String>,
    /// When the session began, RFC 3339 in UTC to the second.
    pub started: String,
    /// False while running and after an interruption: later rounds are missing.
    pub complete: bool,
    /// Measured rounds asked for (`--runs`); adaptive rounds come on top.
    pub runs_requested: u32,
    /// Warm-up rounds run before the measured ones (`--warmup`).
    pub warmup: u32,
    /// Transparent huge pages for the command: `never` (disabled for it) or `system` (as the
    /// machine sets them).
    pub thp: Thp,
    /// The per-run timeout in seconds, or None without one.
    pub timeout_s: Option<f64>,
    /// "perf" (tracepoint counters inherited by the process tree, every run), "ptrace"
    /// (one extra traced run per allocator, memory syscalls only) or why syscalls were
    /// not counted.
    pub syscall_counter: String,
    /// The machine and software the session ran on, as the driver sees it.
    pub environment: crate::model::environment::Environment,
    /// One row per allocator (per allocator and command in a session of several), in the order
    /// given.
    pub allocators: Vec<AllocatorRuns>,
    /// The seed of every round's order (rounds are shuffled; absent in records written
    /// when allocators alternated in a fixed order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// `--noise-threshold` as a fraction (2 % before it was recorded).
    #[serde(default = "default_noise_threshold")]
    pub noise_threshold: f64,
    /// The confidence level of its intervals and verdicts (`--confidence`; 95 % before
    /// it was recorded).
    #[serde(default = "default_confidence")]
    pub confidence: f64,
    /// A session of several commands (`exec -c … -c …`): each with its name, the first
    /// the baseline the others are compared with under each allocator. Empty for one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<NamedCommand>,
    /// With `--counters ptrace`: what one trapped memory syscall cost here (ns), measured
    /// before the traced runs (the lab's own loop of mmap/munmap calls, traced against
    /// untraced); the row's check of a traced run that kept its time uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trap_cost_ns: Option<f64>,
    /// What stopped an incomplete session (the signal's name, e.g. "SIGINT"), where it
    /// was known when the record was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Rounds run after the `runs_requested` ones because a comparison with the first
    /// allocator was still open (`exec`'s adaptive rounds; 0 without).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub adaptive_rounds: u32,
    /// --max-time left no room for all `runs_requested` rounds: how many ran (None: all
    /// of them did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_cut: Option<u32>,
    /// The session's bound in seconds (`--max-time`; None where none applied).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time_s: Option<f64>,
}

/// One of several commands of a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamedCommand {
    /// The name the command's rows are labelled with.
    pub name: String,
    /// The command and its arguments as given.
    pub command: Vec<String>,
}

fn default_noise_threshold() -> f64 {
    crate::model::metric::NOISE_THRESHOLD
}

fn default_confidence() -> f64 {
    crate::model::metric::DEFAULT_LEVEL
}

/// The format name every `exec.json` record carries in [`ExecRecord::schema`].
pub const SCHEMA: &str = "alloclab.exec/1";

fn is_zero(n: &u32) -> bool {
    *n == 0
}
