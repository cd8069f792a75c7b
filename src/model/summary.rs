//! One flat summary row per run, with units in the field names: what summary.csv, the
//! JSON output and every table are made from.

use crate::model::metric::{Figures, Spread};
#[cfg(test)]
use crate::model::metric::{BRK, MINOR_FAULTS};
use crate::model::record::{Outcome, RunFailure, RunRecord};
use crate::model::spec::{Allocator, Variant, Workload};
use serde::{Deserialize, Serialize};

/// Whether a run produced a record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The run produced a record.
    Ok,
    /// No record: the run failed (or, in an empty row, has not run).
    #[default]
    Failed,
}

impl RunStatus {
    /// Whether the run produced a record.
    pub fn is_ok(self) -> bool {
        self == RunStatus::Ok
    }
}

/// One run, flat, with units in the names; `null` where a value is unavailable or the
/// run failed (`status` and `error` say which).
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRow {
    /// Identifies the run's files in a results folder (`runs/<run_id>.json`, …).
    pub run_id: String,
    /// The allocator the worker is linked with (`system` for an installed library).
    pub allocator: Allocator,
    /// The allocator with its knobs and THP mode, e.g. `system:top_pad=64M thp=never`.
    pub allocator_spec: String,
    /// The workload the run measured.
    pub workload: Workload,
    /// How the workload treated its temporaries.
    pub variant: Variant,
    /// Elements in the input array.
    pub size: u64,
    /// Threads that ran the workload, the main thread included.
    pub threads: u32,
    /// Seed of the input data.
    pub seed: u64,
    /// Whether the run produced a record.
    pub status: RunStatus,
    /// Why the run produced no record; None when it did.
    pub error: Option<String>,
    /// Measured iterations of every thread (summed over processes).
    pub iterations: Option<u64>,
    /// The smallest latency sample, in ns (over every process).
    pub min_ns: Option<u64>,
    /// The median latency, in ns (the median of the processes' p50s where there are several).
    pub p50_ns: Option<u64>,
    /// The 90th-percentile latency, in ns (the median over processes where there are several).
    pub p90_ns: Option<u64>,
    /// The 99th-percentile latency, in ns (the median over processes where there are several).
    pub p99_ns: Option<u64>,
    /// The 99.9th-percentile latency, in ns (the median over processes where there are several).
    pub p999_ns: Option<u64>,
    /// The largest latency sample, in ns (over every process).
    pub max_ns: Option<u64>,
    /// The mean latency, in ns (the median of the processes' means where there are several).
    pub mean_ns: Option<f64>,
    /// Inputs read plus result written per iteration, over the p50 time (bytes/ns).
    pub throughput_gb_per_s: Option<f64>,
    /// Every count of the registry per iteration ([`crate::model::metric::METRICS`]),
    /// null where not read (or where syscalls were not counted), with the method that
    /// counted the syscalls (`syscall_counter`: `perf` or `ptrace`).
    #[serde(flatten)]
    pub per_iter: Figures,
    /// Resident set when the measured phase began, in bytes (None where it was not read).
    pub rss_start_bytes: Option<u64>,
    /// Resident set when the measured phase ended, in bytes (None where it was not read).
    pub rss_end_bytes: Option<u64>,
    /// Peak resident set of the worker process (ru_maxrss), warm-up included, in bytes.
    pub rss_peak_bytes: Option<u64>,
    /// The process's memory over its life, sampled by the driver
    /// ([`crate::model::metric::MEMORY_METRICS`]), medians over the processes; null where
    /// not sampled.
    #[serde(flatten)]
    pub memory: crate::model::metric::MemoryFigures,
    /// The interval of the median over processes of the mean and the last resident
    /// memory (`mem_mean_ci_low_bytes` …), at the level of the p50's; empty with one
    /// process.
    #[serde(flatten)]
    pub memory_ci: crate::model::metric::MemoryIntervals,
    /// FNV-1a 64 of the output's bit patterns, as 16 hex digits (the first process's).
    pub checksum: Option<String>,
    /// Median back-to-back clock-read pair of the (first) process, in ns: the floor of every
    /// latency.
    pub timer_overhead_ns: Option<f64>,
    /// Mean cost per sample of the measuring harness of the (first) process, in ns.
    pub harness_overhead_ns_per_sample: Option<f64>,
    /// The allocator's own version, as the (first) worker read it.
    pub allocator_version: Option<String>,
    /// Worker processes behind the row's figures (one per round); with more than one,
    /// `p50_ns`, `p99_ns` and the per-iteration counts are medians over the processes.
    pub processes: Option<u32>,
    /// Lower end of the interval of the median p50 over processes, at the confidence
    /// level (95 % unless `--confidence` says otherwise; order statistics; see
    /// `ci_coverage` for the coverage the process count allows).
    pub p50_ci_low_ns: Option<u64>,
    /// Upper end of the p50 interval.
    pub p50_ci_high_ns: Option<u64>,
    /// Lower end of the interval of the median p99 over processes (as for p50).
    pub p99_ci_low_ns: Option<u64>,
    /// Upper end of the p99 interval.
    pub p99_ci_high_ns: Option<u64>,
    /// The coverage the intervals reach with this many processes (a fraction; below the level
    /// asked for with few processes, where the interval is the processes' whole range).
    pub ci_coverage: Option<f64>,
    /// The spread of the per-process counts with a `spread` in the registry (minor
    /// faults, memory syscalls): `<key>_min` and `<key>_max` over processes.
    #[serde(flatten)]
    pub spread: Spread,
    /// p50 relative to the same allocator's in-place row, from paired rounds: the median
    /// ratio, its 95 % interval and the verdict against the noise threshold.
    pub vs_in_place: Option<f64>,
    /// Lower end of the `vs_in_place` ratio's interval.
    pub vs_in_place_ci_low: Option<f64>,
    /// Upper end of the `vs_in_place` ratio's interval.
    pub vs_in_place_ci_high: Option<f64>,
    /// The verdict on `vs_in_place`: "faster", "slower", "no significant difference" or
    /// "undecided".
    pub vs_in_place_verdict: Option<String>,
    /// Each process's p50 (ns), in round order: what `diff` compares two cells by (in
    /// CSV the numbers separated by spaces in one cell).
    pub process_p50_ns: Option<Vec<u64>>,
    /// The per-process figures that fall into two or more groups (p50, faults and
    /// memory syscalls per iteration): their medians above describe no process. Empty
    /// with fewer than 4 processes.
    #[serde(default)]
    pub behaviours: Vec<crate::model::behaviours::Behaviours>,
    /// The p50 of every process's samples pooled into one histogram (what the cell's
    /// histogram files show), beside `p50_ns`, the median of the processes' p50s (what
    /// the intervals and verdicts are of). The same with one process.
    pub pooled_p50_ns: Option<u64>,
}

impl SummaryRow {
    /// A row with every value null, for the field names.
    pub fn empty() -> Self {
        SummaryRow::from_outcome(&Outcome {
            spec: crate::model::run::RunSpec {
                allocator: Allocator::System,
                workload: Workload::Scale,
                variant: Variant::InPlace,
                size: 0,
                threads: 0,
                seed: 0,
                knobs: Vec::new(),
                thp: Default::default(),
                library: None,
            },
            result: Err(RunFailure {
                cause: String::new(),
            }),
        })
    }

    /// The row of one run (a single process): its figures where it produced a record, nulls
    /// and the failure's cause where it did not.
    pub fn from_outcome(o: &Outcome) -> Self {
        let s = &o.spec;
        let r = o.result.as_ref().ok();
        let f = |get: fn(&RunRecord) -> Option<f64>| r.and_then(get);
        let u = |get: fn(&RunRecord) -> Option<u64>| r.and_then(get);
        SummaryRow {
            run_id: crate::model::experiment::run_id(s),
            allocator: s.allocator,
            allocator_spec: s.allocator_label(),
            workload: s.workload,
            variant: s.variant,
            size: s.size,
            threads: s.threads,
            seed: s.seed,
            status: if r.is_some() {
                RunStatus::Ok
            } else {
                RunStatus::Failed
            },
            error: o.result.as_ref().err().map(|e| e.cause.clone()),
            iterations: u(|r| Some(r.iterations)),
            min_ns: u(|r| Some(r.min_ns)),
            p50_ns: u(|r| Some(r.p50_ns)),
            p90_ns: u(|r| Some(r.p90_ns)),
            p99_ns: u(|r| Some(r.p99_ns)),
            p999_ns: u(|r| Some(r.p999_ns)),
            max_ns: u(|r| Some(r.max_ns)),
            mean_ns: f(|r| Some(r.mean_ns)),
            throughput_gb_per_s: r.filter(|r| r.workload.sized_by_elements()).map(|r| {
                r.workload.useful_bytes(r.size) as f64 * f64::from(r.threads)
                    / r.p50_ns.max(1) as f64
            }),
            per_iter: r.map(|r| r.per_iter.clone()).unwrap_or_default(),
            rss_start_bytes: u(|r| r.rss_start_bytes),
            rss_end_bytes: u(|r| r.rss_end_bytes),
            rss_peak_bytes: u(|r| Some(r.rss_peak_bytes)),
            memory: r.map(|r| r.memory.clone()).unwrap_or_default(),
            memory_ci: Default::default(),
            checksum: r.map(|r| r.checksum.clone()),
            timer_overhead_ns: f(|r| Some(r.overhead.timer_overhead_ns)),
            harness_overhead_ns_per_sample: f(|r| Some(r.overhead.harness_overhead_ns_per_sample)),
            allocator_version: r.map(|r| r.env.allocator_version.clone()),
            processes: r.map(|_| 1),
            p50_ci_low_ns: None,
            p50_ci_high_ns: None,
            p99_ci_low_ns: None,
            p99_ci_high_ns: None,
            ci_coverage: None,
            spread: Spread::default(),
            vs_in_place: None,
            vs_in_place_ci_low: None,
            vs_in_place_ci_high: None,
            vs_in_place_verdict: None,
            process_p50_ns: r.map(|r| vec![r.p50_ns]),
            behaviours: Vec::new(),
            pooled_p50_ns: u(|r| Some(r.p50_ns)),
        }
    }
}

/// A successful scale row at 1,000 elements with the given figures, for tests.
#[cfg(test)]
pub fn sample(alloc: &str, variant: &str, p50: u64, faults: f64, brk: Option<f64>) -> SummaryRow {
    let o = Outcome {
        spec: crate::model::run::RunSpec {
            allocator: alloc.parse().unwrap(),
            workload: Workload::Scale,
            variant: variant.parse().unwrap(),
            size: 1000,
            threads: 1,
            seed: 1,
            knobs: Vec::new(),
            thp: Default::default(),
            library: None,
        },
        result: Err(RunFailure { cause: "x".into() }),
    };
    let mut r = SummaryRow::from_outcome(&o);
    r.status = RunStatus::Ok;
    r.error = None;
    r.iterations = Some(100);
    r.p50_ns = Some(p50);
    r.p99_ns = Some(p50 * 2);
    r.per_iter[MINOR_FAULTS] = Some(faults);
    r.per_iter[BRK] = brk;
    r
}
