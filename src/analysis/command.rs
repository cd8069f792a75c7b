//! A command's runs summarized: one row per allocator, medians over its runs with
//! intervals, and wall-time ratios against the first allocator from paired rounds.

use crate::analysis::modes::{self, Behaviours, Unit};
use crate::analysis::stats::{compare_paired, level, median, median_ci, Comparison};
use crate::model::command::{AllocatorRuns, ExecRecord, ExecRun};
use crate::model::summary::RunStatus;
use serde::{Deserialize, Serialize};

/// One allocator over its runs. Times and counts are medians over the runs; the wall
/// time's spread is given by min, max and the median absolute deviation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecRow {
    pub allocator: String,
    /// "ok" or "failed".
    pub status: RunStatus,
    pub error: Option<String>,
    pub runs: usize,
    pub wall_median_ms: Option<f64>,
    pub wall_min_ms: Option<f64>,
    pub wall_max_ms: Option<f64>,
    /// Median absolute deviation of the wall time, in % of the median (two runs or more).
    pub wall_mad_pct: Option<f64>,
    /// 95 % interval of the median wall time over the runs (order statistics) and the
    /// coverage the number of runs allows.
    pub wall_ci_low_ms: Option<f64>,
    pub wall_ci_high_ms: Option<f64>,
    pub wall_ci_coverage: Option<f64>,
    /// Wall time relative to the first allocator's (the baseline): the median of the
    /// per-round ratios (runs of one round are paired), its 95 % interval and verdict.
    pub vs_baseline: Option<f64>,
    pub vs_baseline_ci_low: Option<f64>,
    pub vs_baseline_ci_high: Option<f64>,
    pub vs_baseline_verdict: Option<String>,
    pub baseline: Option<String>,
    pub user_ms: Option<f64>,
    pub sys_ms: Option<f64>,
    pub minflt: Option<f64>,
    pub majflt: Option<f64>,
    pub voluntary_csw: Option<f64>,
    pub involuntary_csw: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    pub brk: Option<f64>,
    pub mmap: Option<f64>,
    pub munmap: Option<f64>,
    pub madvise: Option<f64>,
    pub mremap: Option<f64>,
    pub syscalls: Option<f64>,
    /// How syscalls were counted ("perf"), or why they were not.
    pub syscall_counter: String,
    pub allocator_version: Option<String>,
    pub preload: Option<String>,
    pub malloc_from: Option<String>,
    /// The command as a shell would take it (new columns go last: the others keep their
    /// places in CSV).
    #[serde(default)]
    pub command: String,
    /// Each run's wall time, in round order (in CSV a JSON array in one cell): what
    /// `diff` compares two sides by.
    #[serde(default)]
    pub run_wall_ms: Vec<f64>,
    /// Whether every planned round ran (false after Ctrl-C or SIGTERM), on every row so
    /// that a row read alone says it; the signal that stopped it; the runs planned per
    /// allocator (`runs` is how many finished).
    #[serde(default)]
    pub complete: Option<bool>,
    #[serde(default)]
    pub stopped_by: Option<String>,
    #[serde(default)]
    pub runs_planned: Option<u32>,
    /// The figures whose runs fall into two or more groups ([`crate::analysis::modes`]):
    /// their medians above describe no run.
    #[serde(default)]
    pub behaviours: Vec<Behaviours>,
}

fn med(runs: &[ExecRun], f: impl Fn(&ExecRun) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(f).collect();
    // A value only where every run has it.
    (v.len() == runs.len()).then(|| median(&v)).flatten()
}

fn row_of(a: &AllocatorRuns, syscall_counter: &str) -> ExecRow {
    let runs = &a.runs;
    let ms = |ns: u64| ns as f64 / 1e6;
    let walls: Vec<f64> = runs.iter().map(|r| ms(r.wall_ns)).collect();
    let wall_median = median(&walls);
    // One run has no spread to speak of: n/a rather than 0 %.
    let mad = wall_median.filter(|_| walls.len() > 1).and_then(|m| {
        let dev: Vec<f64> = walls.iter().map(|w| (w - m).abs()).collect();
        median(&dev).map(|d| 100.0 * d / m)
    });
    let ci = median_ci(&walls, level());
    let traced = syscall_counter == "ptrace";
    let sc = |f: fn(&crate::counters::linux::perf::SyscallCounts) -> Option<u64>| {
        if traced {
            // One traced run per allocator: its counts, if it has them.
            a.traced_syscalls.as_ref().and_then(f).map(|v| v as f64)
        } else {
            med(runs, move |r| {
                r.syscalls.as_ref().and_then(f).map(|v| v as f64)
            })
        }
    };
    ExecRow {
        behaviours: run_behaviours(runs),
        complete: None,
        stopped_by: None,
        runs_planned: None,
        command: String::new(),
        allocator: a.allocator.clone(),
        status: if a.failure.is_none() {
            RunStatus::Ok
        } else {
            RunStatus::Failed
        },
        error: a.failure.clone(),
        runs: runs.len(),
        wall_median_ms: wall_median,
        wall_min_ms: walls.iter().copied().reduce(f64::min),
        wall_max_ms: walls.iter().copied().reduce(f64::max),
        wall_mad_pct: mad,
        wall_ci_low_ms: ci.map(|c| c.low),
        wall_ci_high_ms: ci.map(|c| c.high),
        wall_ci_coverage: ci.map(|c| c.coverage),
        run_wall_ms: walls.clone(),
        vs_baseline: None,
        vs_baseline_ci_low: None,
        vs_baseline_ci_high: None,
        vs_baseline_verdict: None,
        baseline: None,
        user_ms: med(runs, |r| Some(ms(r.usage.utime_ns))),
        sys_ms: med(runs, |r| Some(ms(r.usage.stime_ns))),
        minflt: med(runs, |r| Some(r.usage.minflt as f64)),
        majflt: med(runs, |r| Some(r.usage.majflt as f64)),
        voluntary_csw: med(runs, |r| Some(r.usage.nvcsw as f64)),
        involuntary_csw: med(runs, |r| Some(r.usage.nivcsw as f64)),
        peak_rss_mib: med(runs, |r| {
            Some(r.usage.maxrss_bytes as f64 / (1 << 20) as f64)
        }),
        brk: sc(|s| Some(s.brk)),
        mmap: sc(|s| Some(s.mmap)),
        munmap: sc(|s| Some(s.munmap)),
        madvise: sc(|s| Some(s.madvise)),
        mremap: sc(|s| Some(s.mremap)),
        syscalls: sc(|s| s.all),
        syscall_counter: match (&a.traced_note, traced) {
            (Some(note), true) => format!("ptrace: {note}"),
            _ => syscall_counter.to_string(),
        },
        allocator_version: a.version.clone(),
        preload: a.preload.clone(),
        malloc_from: a.malloc_from.clone(),
    }
}

/// The per-run figures of `runs` that show two or more behaviours: wall time, minor
/// faults, peak RSS and each memory syscall (where every run counted them).
fn run_behaviours(runs: &[ExecRun]) -> Vec<Behaviours> {
    let of = |f: &dyn Fn(&ExecRun) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
    let mut figures = vec![
        ("wall time", Unit::Ns, of(&|r| r.wall_ns as f64)),
        ("minor faults", Unit::Count, of(&|r| r.usage.minflt as f64)),
        (
            "peak RSS",
            Unit::Bytes,
            of(&|r| r.usage.maxrss_bytes as f64),
        ),
    ];
    let counted: Vec<_> = runs.iter().filter_map(|r| r.syscalls.as_ref()).collect();
    if counted.len() == runs.len() {
        type Get = fn(&crate::model::counts::SyscallCounts) -> u64;
        let kinds: [(&str, Get); 5] = [
            ("brk calls", |c| c.brk),
            ("mmap calls", |c| c.mmap),
            ("munmap calls", |c| c.munmap),
            ("madvise calls", |c| c.madvise),
            ("mremap calls", |c| c.mremap),
        ];
        for (name, get) in kinds {
            figures.push((
                name,
                Unit::Count,
                counted.iter().map(|c| get(c) as f64).collect(),
            ));
        }
    }
    modes::behaviours(&figures)
}

/// `runs` against `base`, paired by round: the per-round wall-time ratios, a verdict
/// beyond ±`threshold`.
pub fn paired(base: &[ExecRun], runs: &[ExecRun], threshold: f64) -> Option<Comparison> {
    let pairs: Vec<(f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            let b = base.iter().find(|b| b.round == r.round)?;
            Some((b.wall_ns as f64, r.wall_ns as f64))
        })
        .collect();
    compare_paired(&pairs, threshold)
}

/// Summary rows, in the order given; ratios against the first allocator that has runs.
pub fn rows(record: &ExecRecord) -> Vec<ExecRow> {
    let mut rows: Vec<ExecRow> = record
        .allocators
        .iter()
        .map(|a| ExecRow {
            command: crate::fmt::shell_words(&record.command),
            complete: Some(record.complete),
            stopped_by: (!record.complete).then(|| {
                crate::ui::interrupt::signal_name()
                    .unwrap_or("an interrupt")
                    .to_string()
            }),
            runs_planned: Some(record.runs_requested),
            ..row_of(a, &record.syscall_counter)
        })
        .collect();
    let Some(b) = rows
        .iter()
        .position(|r| r.status.is_ok() && r.wall_median_ms.is_some())
    else {
        return rows;
    };
    let name = rows[b].allocator.clone();
    for (r, a) in rows.iter_mut().zip(&record.allocators) {
        if r.wall_median_ms.is_none() {
            continue;
        }
        if let Some(c) = paired(&record.allocators[b].runs, &a.runs, record.noise_threshold) {
            r.vs_baseline = Some(c.ratio);
            r.vs_baseline_ci_low = c.interval.map(|ci| ci.low);
            r.vs_baseline_ci_high = c.interval.map(|ci| ci.high);
            r.vs_baseline_verdict = c.verdict.map(|v| v.words().to_string());
            r.baseline = Some(name.clone());
        }
    }
    rows
}

/// brk + mmap + munmap + madvise + mremap of an exec row.
pub fn memory(r: &ExecRow) -> Option<f64> {
    Some(r.brk? + r.mmap? + r.munmap? + r.madvise? + r.mremap?)
}
