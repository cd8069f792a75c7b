//! A command's runs summarized: one row per allocator, medians over its runs with
//! intervals, and wall-time ratios against the first allocator from paired rounds.

use crate::analysis::modes::{self, Behaviours, Unit};
use crate::analysis::stats::{compare_paired, median, median_ci, Comparison, Verdict};
use crate::model::command::{AllocatorRuns, ExecRecord, ExecRun, TracedRun};
use crate::model::counts::SyscallCounts;
use crate::model::evidence::Per;
use crate::model::metric::{
    Figures, Metric, Registry, RunFigures, Source, SourceTotals, Unit as MetricUnit, RUN_COUNTS,
    RUN_METRICS, RUN_MINOR_FAULTS, RUN_PEAK_RSS, RUN_SYS_TIME,
};
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
    /// The per-run figures ([`crate::model::metric::RUN_METRICS`]: CPU times, faults,
    /// context switches, peak RSS, memory syscalls), medians over the runs; the memory
    /// syscalls the traced run's where it counted them. In CSV and JSON one column each,
    /// under the registry's keys.
    #[serde(flatten)]
    pub per_run: RunFigures,
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
    /// The signal that stopped an incomplete session, as exec.json records it (empty
    /// where none was: a SIGKILL, or a session still running).
    #[serde(default)]
    pub stopped_by: Option<String>,
    #[serde(default)]
    pub runs_planned: Option<u32>,
    /// The figures whose runs fall into two or more groups ([`crate::analysis::modes`]):
    /// their medians above describe no run.
    #[serde(default)]
    pub behaviours: Vec<Behaviours>,
    /// With `--counters ptrace`: the figures of the traced run that fall outside the
    /// untraced runs' range by more than its width ([`traced_deviations`]); empty when it
    /// behaved as they did, None when not traced or with fewer than two untraced runs.
    #[serde(default)]
    pub traced_differs: Option<Vec<TracedDeviation>>,
    /// Under the ptrace tracer: how its syscalls were counted, in words (`syscall_counter`
    /// is "ptrace: " and these words); the surfaces' note.
    #[serde(skip)]
    pub traced_words: Option<String>,
    /// Its traced run was perturbed by tracing (it did otherwise than the untraced runs,
    /// not just slower by its traps): its memory-syscall counts are not in the row's
    /// figures, only in `traced_words`.
    #[serde(skip)]
    pub traced_perturbed: bool,
    /// The command's memory over each run ([`crate::model::metric::MEMORY_METRICS`]:
    /// peak, mean, end, huge pages; sampled by the driver), medians over the runs; null
    /// where not sampled. The last columns in CSV.
    #[serde(flatten)]
    pub memory: crate::model::metric::MemoryFigures,
    /// The interval of those medians over the runs (the entries with a spread: mean and
    /// last resident memory, freed bytes, …), at the wall time's level; null with fewer
    /// runs than an interval needs. Last in CSV.
    #[serde(flatten, default)]
    pub memory_ci: crate::model::metric::MemoryIntervals,
    /// What its recorded run showed the calls and faults did (exec.json keeps it; not a
    /// column).
    #[serde(skip)]
    pub evidence: Option<crate::model::evidence::Recorded>,
}

/// A figure of the traced run that the untraced runs do not reach: it lies beyond their
/// range by more than the range's width.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TracedDeviation {
    /// The row's field it is compared with, in that field's unit: `wall_ms`, the key of
    /// each per-run registry entry with a margin (user time, faults, peak RSS), or
    /// `memory_syscalls` (brk + mmap + munmap + madvise + mremap, where the untraced runs
    /// were counted too).
    pub figure: String,
    pub traced: f64,
    pub untraced_min: f64,
    pub untraced_max: f64,
    pub untraced_median: f64,
}

/// A figure a traced run is compared on: its wall time, each per-run registry entry
/// with a margin (`cause_from`: user time, minor faults, peak RSS; not system time nor
/// context switches, which every trapped call moves whatever the program does), and the
/// memory syscalls' sum (only where the untraced runs were counted too).
#[derive(Clone, Copy)]
enum Compared {
    Wall,
    Entry(Metric),
    MemoryCalls,
}

impl Compared {
    fn all() -> impl Iterator<Item = Compared> {
        std::iter::once(Compared::Wall)
            .chain(
                RUN_METRICS
                    .iter()
                    .filter(|m| m.cause_from.is_some())
                    .map(|m| Compared::Entry(*m)),
            )
            .chain(std::iter::once(Compared::MemoryCalls))
    }

    /// The row's field it is compared with.
    fn key(self) -> &'static str {
        match self {
            Compared::Wall => "wall_ms",
            Compared::Entry(m) => m.key,
            Compared::MemoryCalls => "memory_syscalls",
        }
    }

    fn words(self) -> &'static str {
        match self {
            Compared::Wall => "wall time",
            Compared::Entry(m) => m.label,
            Compared::MemoryCalls => "memory syscalls",
        }
    }

    /// The least margin that counts as a difference.
    fn least(self) -> f64 {
        match self {
            Compared::Wall => 1.0,
            Compared::Entry(m) => m.named_from(),
            Compared::MemoryCalls => 2.0,
        }
    }

    /// Its figure of a run that took `wall_ns` with `figures`.
    fn of(self, wall_ns: u64, figures: &RunFigures) -> Option<f64> {
        match self {
            Compared::Wall => Some(wall_ns as f64 / 1e6),
            Compared::Entry(m) => figures[m],
            Compared::MemoryCalls => figures.memory_calls(),
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Compared::Wall => crate::fmt::fmt_ns(v * 1e6),
            Compared::Entry(m) => m.show(v),
            Compared::MemoryCalls => crate::fmt::fmt_count(v.round()),
        }
    }
}

fn memory_calls(s: &SyscallCounts) -> f64 {
    (s.brk + s.mmap + s.munmap + s.madvise + s.mremap) as f64
}

/// Whether `traced` lies outside the range of `untraced` by more than the range's width,
/// and by more than `floor` × their median and `least` (so that untraced runs that agree
/// exactly do not make every difference one). None for fewer than two untraced values:
/// one run has no spread to judge by.
pub fn beyond_spread(untraced: &[f64], traced: f64, floor: f64, least: f64) -> Option<bool> {
    if untraced.len() < 2 {
        return None;
    }
    let lo = untraced.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = untraced.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let m = median(untraced)?;
    let margin = (hi - lo).max(floor * m.abs()).max(least);
    Some(traced > hi + margin || traced < lo - margin)
}

/// The figures of `traced` that the untraced `runs` do not reach ([`beyond_spread`], with
/// `floor` the noise threshold); None with fewer than two runs.
pub fn traced_deviations(
    runs: &[ExecRun],
    traced: &TracedRun,
    counts: Option<&SyscallCounts>,
    floor: f64,
) -> Option<Vec<TracedDeviation>> {
    if runs.len() < 2 {
        return None;
    }
    let mut out = Vec::new();
    let traced_figures = traced.figures(counts.copied());
    let figures: Vec<RunFigures> = runs.iter().map(ExecRun::figures).collect();
    for f in Compared::all() {
        let v: Vec<f64> = runs
            .iter()
            .zip(&figures)
            .filter_map(|(r, x)| f.of(r.wall_ns, x))
            .collect();
        let Some(t) = f.of(traced.wall_ns, &traced_figures) else {
            continue;
        };
        if v.len() != runs.len() || beyond_spread(&v, t, floor, f.least()) != Some(true) {
            continue;
        }
        out.push(TracedDeviation {
            figure: f.key().to_string(),
            traced: t,
            untraced_min: v.iter().copied().fold(f64::INFINITY, f64::min),
            untraced_max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            untraced_median: median(&v).unwrap_or(f64::NAN),
        });
    }
    Some(out)
}

/// A traced run that kept its time although its trapped calls should have slowed it:
/// the calls the tracer counted × what one trapped call cost here (`trap_cost_ns`,
/// measured) is the slow-down it should show; where that is more than twice the untraced
/// runs' spread (and 2 ms) and the traced run took less than half of
/// it, the program ran for a fixed time and did other work than the untraced runs (fewer
/// rounds, other threads), so its counts are not theirs. As a deviation of the figure
/// `trap_time_ms`: `traced` the slow-down seen, the untraced fields the one expected.
pub fn time_bound(
    runs: &[ExecRun],
    traced: &TracedRun,
    counts: Option<&SyscallCounts>,
    trap_cost_ns: Option<f64>,
) -> Option<TracedDeviation> {
    let (cost, counts) = (trap_cost_ns?, counts?);
    let walls: Vec<f64> = runs.iter().map(|r| r.wall_ns as f64).collect();
    if walls.len() < 2 {
        return None;
    }
    let m = median(&walls)?;
    let lo = walls.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = walls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let expected = memory_calls(counts) * cost;
    let seen = traced.wall_ns as f64 - m;
    // The untraced runs' own spread is the noise the two readings must stand apart by (a
    // program that runs for a fixed time keeps it small); at least a millisecond.
    let width = (hi - lo).max(1e6);
    (expected > 2.0 * width && seen < 0.5 * expected).then(|| TracedDeviation {
        figure: "trap_time_ms".into(),
        traced: seen / 1e6,
        untraced_min: expected / 1e6,
        untraced_max: expected / 1e6,
        untraced_median: expected / 1e6,
    })
}

/// Whether the traced run's extra wall time is what its trapped calls cost (within half
/// of that, or the untraced runs' spread): the tracer's slow-down, not other work.
pub fn trap_slowdown_explains(
    runs: &[ExecRun],
    traced: &TracedRun,
    counts: Option<&SyscallCounts>,
    trap_cost_ns: Option<f64>,
) -> bool {
    let (Some(cost), Some(counts)) = (trap_cost_ns, counts) else {
        return false;
    };
    let walls: Vec<f64> = runs.iter().map(|r| r.wall_ns as f64).collect();
    let Some(m) = median(&walls) else {
        return false;
    };
    let lo = walls.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = walls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let expected = memory_calls(counts) * cost;
    let seen = traced.wall_ns as f64 - m;
    (seen - expected).abs() <= (0.5 * expected).max(hi - lo)
}

/// The untraced runs (or processes) a traced one is stated against: their median time
/// with its interval. The one composer of a traced run against its untraced ones (exec's
/// counted run, trace's traced runs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UntracedTimes {
    pub median_ns: f64,
    /// The median's interval: low, high, coverage.
    pub ci: Option<(f64, f64, f64)>,
    pub n: usize,
}

impl UntracedTimes {
    /// A command's runs, their wall time.
    pub const RUNS: (&'static str, &'static str, &'static str) =
        ("runs' median wall time", "run", "runs");
    /// A cell's worker processes, the median of their iterations' p50s.
    pub const PROCESSES: (&'static str, &'static str, &'static str) =
        ("processes' median", "process", "processes");

    /// Of the untraced times (None without one, or with a median of 0).
    pub fn of(times_ns: &[f64], level: f64) -> Option<UntracedTimes> {
        let m = median(times_ns).filter(|m| *m > 0.0)?;
        Some(UntracedTimes {
            median_ns: m,
            ci: median_ci(times_ns, level).map(|c| (c.low, c.high, c.coverage)),
            n: times_ns.len(),
        })
    }

    /// "1.85x the untraced runs' median wall time (223 ms of 5 runs [219 ms, 230 ms]
    /// (96.9 % interval); 1.79x–1.88x over it)"; `(whose, unit)` one of [`Self::RUNS`],
    /// [`Self::PROCESSES`].
    pub fn text(&self, traced_ns: f64, (whose, one, many): (&str, &str, &str)) -> String {
        let unit = if self.n == 1 { one } else { many };
        let ci = match self.ci {
            Some((lo, hi, cov)) if lo > 0.0 => format!(
                " [{}, {}] ({:.1} % interval); {:.2}x–{:.2}x over it",
                crate::fmt::fmt_ns(lo),
                crate::fmt::fmt_ns(hi),
                100.0 * cov,
                traced_ns / hi,
                traced_ns / lo
            ),
            _ => String::new(),
        };
        format!(
            "{:.2}x the untraced {whose} ({} of {} {unit}{ci})",
            traced_ns / self.median_ns,
            crate::fmt::fmt_ns(self.median_ns),
            self.n
        )
    }
}

/// The row's words on its traced run: how much slower, and which of its figures the
/// untraced runs do not reach; `counts` where they are perturbed by tracing (not the
/// allocator's: said apart from the row's figures).
fn traced_text(
    runs: &[ExecRun],
    t: &TracedRun,
    differs: Option<&[TracedDeviation]>,
    counts: Option<&SyscallCounts>,
    level: f64,
) -> String {
    let walls: Vec<f64> = runs.iter().map(|r| r.wall_ns as f64).collect();
    let mut s = String::from("counted in one traced run");
    if let Some(against) = UntracedTimes::of(&walls, level) {
        s.push_str(&format!(
            ", {}",
            against.text(t.wall_ns as f64, UntracedTimes::RUNS)
        ));
    }
    match differs {
        None => s.push_str(
            "; with fewer than two untraced runs there is no spread to tell a different behaviour by",
        ),
        Some([]) => s.push_str(
            "; its wall and user time, minor faults and peak RSS were within the untraced runs' range, give or take its width (threads created and work done were not compared)",
        ),
        Some(d) => {
            let bound = d.iter().find(|x| x.figure == "trap_time_ms").map(|x| {
                format!(
                    "it should have taken about {} longer than their median (its trapped calls × their measured cost) and took {} longer: it kept its time, as a program that runs for a fixed time does, and so did other work than they did",
                    crate::fmt::fmt_ns(x.untraced_median * 1e6),
                    crate::fmt::fmt_ns(x.traced.max(0.0) * 1e6)
                )
            });
            let parts: Vec<String> = d
                .iter()
                .filter_map(|x| {
                    let f = Compared::all().find(|f| f.key() == x.figure)?;
                    let ratio = if x.untraced_median != 0.0 {
                        format!(", {:.2}x their median", x.traced / x.untraced_median)
                    } else {
                        String::new()
                    };
                    Some(format!(
                        "{} {} against {}–{}{ratio}",
                        f.words(),
                        f.show(x.traced),
                        f.show(x.untraced_min),
                        f.show(x.untraced_max)
                    ))
                })
                .collect();
            let beyond = (!parts.is_empty()).then(|| {
                format!(
                    "it behaved otherwise than the untraced runs ({}: beyond their range by more than its width)",
                    parts.join("; ")
                )
            });
            let said: Vec<String> = beyond.into_iter().chain(bound).collect();
            let n = |v: u64| crate::fmt::group_thousands(v as i64);
            let what = counts.map_or("its counts may not be theirs".to_string(), |c| {
                format!(
                    "its counts are perturbed by tracing and not shown as the allocator's: brk {}, mmap {}, munmap {}, madvise {}, mremap {}",
                    n(c.brk),
                    n(c.mmap),
                    n(c.munmap),
                    n(c.madvise),
                    n(c.mremap)
                )
            });
            s.push_str(&format!("; {}, so {what}", said.join("; and ")));
        }
    }
    s
}

/// The medians of `a`'s runs' figures by registry `R` (each in its unit, per run): an
/// entry's median only where every run has it; the memory syscalls those of the one
/// traced run where `traced` (none where it counted none); sums derived from the medians.
pub fn medians<R: Registry>(a: &AllocatorRuns, traced: bool) -> Figures<R> {
    medians_of(a, traced, true)
}

/// [`medians`], the traced run's counts left out where `use_traced` is false (a run
/// perturbed by tracing): the memory syscalls are then none.
fn medians_of<R: Registry>(a: &AllocatorRuns, traced: bool, use_traced: bool) -> Figures<R> {
    let figures: Vec<Figures<R>> = a
        .runs
        .iter()
        .map(|r| Figures::of_totals(&SourceTotals::of_run(&r.usage, r.syscalls)))
        .collect();
    let traced_counts: Option<Figures<R>> =
        a.traced_syscalls.filter(|_| traced && use_traced).map(|s| {
            Figures::of_totals(&SourceTotals {
                syscalls: Some(s),
                ..Default::default()
            })
        });
    let mut f = Figures::each(|m| match (&traced_counts, m.source) {
        (Some(t), Source::Syscalls) => t[m],
        (None, Source::Syscalls) if traced => None,
        _ => med_of(&figures, m),
    });
    f.derive();
    f
}

/// The median of entry `m` over the runs' figures: a value only where every run has it.
fn med_of<R: Registry>(figures: &[Figures<R>], m: Metric) -> Option<f64> {
    let v: Vec<f64> = figures.iter().filter_map(|f| f[m]).collect();
    (v.len() == figures.len()).then(|| median(&v)).flatten()
}

fn row_of(
    a: &AllocatorRuns,
    syscall_counter: &str,
    floor: f64,
    trap_cost_ns: Option<f64>,
    level: f64,
) -> ExecRow {
    let runs = &a.runs;
    let ms = |ns: u64| ns as f64 / 1e6;
    let walls: Vec<f64> = runs.iter().map(|r| ms(r.wall_ns)).collect();
    let wall_median = median(&walls);
    // One run has no spread to speak of: n/a rather than 0 %.
    let mad = wall_median.filter(|_| walls.len() > 1).and_then(|m| {
        let dev: Vec<f64> = walls.iter().map(|w| (w - m).abs()).collect();
        median(&dev).map(|d| 100.0 * d / m)
    });
    let ci = median_ci(&walls, level);
    let traced = syscall_counter == "ptrace";
    // Whether the traced run was measurably slower by what its trapped calls cost: it
    // did the same work, slowed (a program of fixed work).
    let mut slowed_by_traps = false;
    let differs = a.traced_run.as_ref().filter(|_| traced).and_then(|t| {
        let mut d = traced_deviations(runs, t, a.traced_syscalls.as_ref(), floor)?;
        // A traced run slower by what its trapped calls cost did the same work: its
        // wall time is no deviation then.
        if trap_slowdown_explains(runs, t, a.traced_syscalls.as_ref(), trap_cost_ns) {
            slowed_by_traps = d.iter().any(|x| x.figure == "wall_ms");
            d.retain(|x| x.figure != "wall_ms");
        }
        d.extend(time_bound(
            runs,
            t,
            a.traced_syscalls.as_ref(),
            trap_cost_ns,
        ));
        Some(d)
    });
    // A traced run that did otherwise than the untraced runs, and was not measurably
    // slowed by its traps alone (the tracer costs a slowed program user time too): its
    // counts are not the allocator's, so the row has none (its words give them apart).
    let perturbed = differs.as_ref().is_some_and(|d| !d.is_empty()) && !slowed_by_traps;
    let per_run = medians_of(a, traced, !perturbed);
    // Medians over the runs that were sampled (one that ended before its first sample,
    // or whose samples could not be read, has none).
    let memory: Vec<_> = runs
        .iter()
        .map(ExecRun::memory_figures)
        .filter(|f| f.any())
        .collect();
    let mut memory_ci = crate::model::metric::MemoryIntervals::default();
    for m in crate::model::metric::MEMORY_METRICS
        .iter()
        .filter(|m| m.spread)
    {
        let v: Vec<f64> = memory.iter().filter_map(|f| f[*m]).collect();
        let all = v.len() == memory.len();
        if let Some(ci) = median_ci(&v, level).filter(|_| all) {
            memory_ci.low[*m] = Some(ci.low);
            memory_ci.high[*m] = Some(ci.high);
        }
    }
    let traced_words = match (&a.traced_run, &a.traced_note, traced) {
        (Some(t), _, true) => Some(traced_text(
            runs,
            t,
            differs.as_deref(),
            a.traced_syscalls.as_ref().filter(|_| perturbed),
            level,
        )),
        (None, Some(note), true) => Some(note.clone()),
        _ => None,
    };
    ExecRow {
        memory: crate::model::metric::MemoryFigures::each(|m| med_of(&memory, m)),
        memory_ci,
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
        per_run,
        syscall_counter: traced_words
            .as_ref()
            .map_or_else(|| syscall_counter.to_string(), |w| format!("ptrace: {w}")),
        traced_words,
        traced_perturbed: perturbed,
        traced_differs: differs,
        allocator_version: a.version.clone(),
        preload: a.preload.clone(),
        malloc_from: a.malloc_from.clone(),
        evidence: a.evidence.clone(),
    }
}

/// The per-run figures of `runs` that show two or more behaviours: wall time and each
/// registry entry searched for them (minor faults, peak RSS, each memory syscall), where
/// every run has it.
fn run_behaviours(runs: &[ExecRun]) -> Vec<Behaviours> {
    let figures: Vec<RunFigures> = runs.iter().map(ExecRun::figures).collect();
    let mut out = vec![(
        "wall time",
        Unit::Ns,
        runs.iter().map(|r| r.wall_ns as f64).collect::<Vec<f64>>(),
    )];
    for m in RUN_METRICS.iter().filter(|m| m.spread) {
        let v: Vec<f64> = figures.iter().filter_map(|f| f[*m]).collect();
        if v.len() == runs.len() {
            let unit = match m.unit {
                MetricUnit::Mib | MetricUnit::Bytes => Unit::Bytes,
                MetricUnit::Ms | MetricUnit::Ns => Unit::Ns,
                MetricUnit::Count => Unit::Count,
            };
            // In the unit's base (bytes, ns), as the behaviours are written.
            out.push((m.label, unit, v.iter().map(|x| x * m.scale).collect()));
        }
    }
    modes::behaviours(&out)
}

/// `runs` against `base`, paired by round: the per-round wall-time ratios, a verdict
/// beyond ±`threshold`.
pub fn paired(
    base: &[ExecRun],
    runs: &[ExecRun],
    threshold: f64,
    level: f64,
) -> Option<Comparison> {
    let pairs: Vec<(f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            let b = base.iter().find(|b| b.round == r.round)?;
            Some((b.wall_ns as f64, r.wall_ns as f64))
        })
        .collect();
    compare_paired(&pairs, threshold, level)
}

/// Summary rows, in the order given; ratios against the first allocator that has runs.
pub fn rows(record: &ExecRecord) -> Vec<ExecRow> {
    let mut rows: Vec<ExecRow> = record
        .allocators
        .iter()
        .map(|a| ExecRow {
            command: crate::fmt::shell_words(
                a.command_index
                    .and_then(|k| record.commands.get(k))
                    .map_or(&record.command, |c| &c.command),
            ),
            complete: Some(record.complete),
            // What exec.json says: the signal that stopped the session, and nothing where
            // none was recorded (a SIGKILL, or a session still running), not a guess.
            stopped_by: (!record.complete)
                .then(|| record.stopped_by.clone())
                .flatten(),
            runs_planned: Some(record.runs_requested),
            ..row_of(
                a,
                &record.syscall_counter,
                record.noise_threshold,
                record.trap_cost_ns,
                record.confidence,
            )
        })
        .collect();
    let Some(b) = rows
        .iter()
        .position(|r| r.status.is_ok() && r.wall_median_ms.is_some())
    else {
        return rows;
    };
    for (i, a) in record.allocators.iter().enumerate() {
        if rows[i].wall_median_ms.is_none() {
            continue;
        }
        // In a session of several commands, a command after the first is compared with
        // the first command under the same allocator; every other row with the first.
        let base = match a.command_index {
            Some(k) if k > 0 => record
                .allocators
                .iter()
                .position(|x| {
                    x.command_index == Some(0) && same_allocator(&x.allocator, &a.allocator)
                })
                .unwrap_or(b),
            _ => b,
        };
        if base == i && i != b {
            continue;
        }
        let name = rows[base].allocator.clone();
        let r = &mut rows[i];
        if let Some(c) = paired(
            &record.allocators[base].runs,
            &a.runs,
            record.noise_threshold,
            record.confidence,
        ) {
            r.vs_baseline = Some(c.ratio);
            r.vs_baseline_ci_low = c.interval.map(|ci| ci.low);
            r.vs_baseline_ci_high = c.interval.map(|ci| ci.high);
            r.vs_baseline_verdict = c.verdict.map(|v| v.words().to_string());
            r.baseline = Some(name.clone());
        }
    }
    rows
}

/// Whether two row labels of a session of several commands (`system [old]`, `system
/// [new]`) are of the same allocator.
fn same_allocator(a: &str, b: &str) -> bool {
    let spec = |l: &str| l.rsplit_once(" [").map_or(l, |(s, _)| s).to_string();
    spec(a) == spec(b)
}

/// The rows of a session of several commands that are slower than their allocator's
/// first command beyond the noise threshold: (row, its baseline).
pub fn regressions(record: &ExecRecord, rows: &[ExecRow]) -> Vec<(String, String)> {
    if record.commands.is_empty() {
        return Vec::new();
    }
    rows.iter()
        .zip(&record.allocators)
        .filter(|(r, a)| {
            a.command_index.is_some_and(|k| k > 0)
                && r.vs_baseline_verdict.as_deref() == Some(Verdict::Slower.words())
        })
        .map(|(r, _)| (r.allocator.clone(), r.baseline.clone().unwrap_or_default()))
        .collect()
}

/// brk + mmap + munmap + madvise + mremap of an exec row.
pub fn memory(r: &ExecRow) -> Option<f64> {
    r.per_run.memory_calls()
}

/// Each row that ran with the row it was compared with: its baseline (in a session of
/// several commands, its allocator's first command), else the first row that ran.
pub fn against_baseline(rows: &[ExecRow]) -> Vec<(&ExecRow, &ExecRow)> {
    let ok: Vec<&ExecRow> = rows
        .iter()
        .filter(|r| r.status.is_ok() && r.runs > 0)
        .collect();
    let Some(&first) = ok.first() else {
        return Vec::new();
    };
    ok.iter()
        .map(|&r| {
            let base = r
                .baseline
                .as_deref()
                .and_then(|b| ok.iter().copied().find(|x| x.allocator == b))
                .unwrap_or(first);
            (r, base)
        })
        .filter(|(r, base)| r.allocator != base.allocator)
        .collect()
}

/// A row's counts per run, keyed as findings.json keys them (`<key>_per_run`).
fn counts_per_run(r: &ExecRow) -> std::collections::BTreeMap<String, Option<f64>> {
    RUN_COUNTS
        .iter()
        .map(|m| (format!("{}_per_run", m.key), r.per_run[*m]))
        .collect()
}

/// exec's answer, one item per allocator against its baseline (the first allocator, or
/// the same allocator's first command in a session): the wall-time ratio with its
/// interval and verdict, and what the counts say moved (a cause only beside a verdict;
/// otherwise the counts are only counts). The console, REPORT.md, report.html and
/// findings.json all show these items.
/// A process's memory over its runs in words: "peak 12.0 MiB [11.8, 12.3], mean 9.1 MiB
/// [9.0, 9.3], end 4.8 MiB [4.7, 4.9]" (medians with their intervals, where there are
/// any); None where nothing was sampled.
pub fn memory_text(
    memory: &crate::model::metric::MemoryFigures,
    ci: &crate::model::metric::MemoryIntervals,
) -> Option<String> {
    use crate::fmt::human_bytes;
    use crate::model::metric::{MEM_LAST, MEM_MEAN, MEM_PEAK};
    let mib = |v: f64| human_bytes(v.max(0.0).round() as u64);
    let parts: Vec<String> = [(MEM_PEAK, "peak"), (MEM_MEAN, "mean"), (MEM_LAST, "end")]
        .into_iter()
        .filter_map(|(m, word)| {
            let v = memory[m]?;
            let interval = match (ci.low[m], ci.high[m]) {
                (Some(lo), Some(hi)) => {
                    // "[11.8, 12.3 MiB]" reads as one unit where both ends share it.
                    let (lo, hi) = (mib(lo), mib(hi));
                    match (lo.rsplit_once(' '), hi.rsplit_once(' ')) {
                        (Some((l, lu)), Some((h, hu))) if lu == hu => format!(" [{l}, {h}]"),
                        _ => format!(" [{lo}, {hi}]"),
                    }
                }
                _ => String::new(),
            };
            Some(format!("{word} {}{interval}", mib(v)))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// One line per allocator whose runs were sampled: "memory, mimalloc (resident, 5 runs):
/// peak …, mean …, end …", medians over the runs with their intervals.
pub fn memory_lines(rows: &[ExecRow]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let text = memory_text(&r.memory, &r.memory_ci)?;
            Some(format!(
                "memory, {} (resident, the command's own process; medians over {} run(s)): {text}",
                r.allocator, r.runs
            ))
        })
        .collect()
}

pub fn answer(rows: &[ExecRow]) -> Vec<crate::analysis::findings::Item> {
    use crate::analysis::findings::{CommandFigures, Figures, Item};
    let mut items = Vec::new();
    for (r, base) in against_baseline(rows) {
        let Some(ratio) = r.vs_baseline else { continue };
        let verdict = match (r.vs_baseline_ci_low, r.vs_baseline_ci_high) {
            (Some(lo), Some(hi)) => {
                let words = r.vs_baseline_verdict.as_deref().unwrap_or("");
                // A faster ratio also as the factor people say: "21.58x faster".
                if words == "faster" && ratio > 0.0 {
                    format!(" [{lo:.2}x, {hi:.2}x]: {:.2}x faster", 1.0 / ratio)
                } else {
                    format!(" [{lo:.2}x, {hi:.2}x]: {words}")
                }
            }
            _ => " (one run: no interval, no verdict)".to_string(),
        };
        let mut text = format!(
            "{}: {ratio:.2}x {}'s wall time{verdict}",
            r.allocator, base.allocator
        );
        let decided = matches!(r.vs_baseline_verdict.as_deref(), Some("faster" | "slower"));
        let cause = why_against(r, base, (ratio, decided));
        if let Some(w) = &cause {
            let decided = matches!(r.vs_baseline_verdict.as_deref(), Some("faster" | "slower"));
            let label = if decided { "why" } else { "counts" };
            text.push_str(&format!("; {label}: {}", w.text));
        }
        // Its price beside it: the kernel's CPU time and the peak RSS, this allocator's
        // against its base's ("kernel CPU time": "system time" beside an allocator named
        // system reads as that allocator's).
        let price: Vec<String> = [RUN_SYS_TIME, RUN_PEAK_RSS]
            .iter()
            .filter_map(|m| {
                let (a, b) = (r.per_run[*m]?, base.per_run[*m]?);
                Some(format!("{} {} vs {}", m.label, m.show(a), m.show(b)))
            })
            .collect();
        if r.per_run[RUN_SYS_TIME].is_some() && base.per_run[RUN_SYS_TIME].is_some() {
            text.push_str(&format!("; {}", price.join(", ")));
        }
        items.push(Item {
            text,
            parts: None,
            incomplete: None,
            figures: Some(Figures::Command(CommandFigures {
                allocator: r.allocator.clone(),
                against_allocator: base.allocator.clone(),
                ratio,
                ratio_low: r.vs_baseline_ci_low,
                ratio_high: r.vs_baseline_ci_high,
                // As findings.json spells verdicts everywhere (`no-significant-difference`).
                verdict: r.vs_baseline_verdict.as_ref().map(|v| v.replace(' ', "-")),
                runs: r.runs,
                against_runs: base.runs,
                counts: counts_per_run(r),
                against_counts: counts_per_run(base),
                cause,
            })),
        });
    }
    items
}

/// Why `r`'s runs differ from `base`'s (its wall time over theirs `ratio`, `decided` a
/// verdict of faster or slower), per run: the one cause composer over their counts and
/// their evidence; None where neither shows a difference or the faults were not read.
pub fn why_against(
    r: &ExecRow,
    base: &ExecRow,
    (ratio, decided): (f64, bool),
) -> Option<crate::analysis::mechanism::Why> {
    use crate::analysis::mechanism::{why_of, Counts, Side, Why};
    fn side(x: &ExecRow) -> Side<'_> {
        Side {
            name: x.allocator.as_str(),
            counts: Counts::of_run(&x.per_run),
            evidence: x.evidence.as_ref(),
        }
    }
    (r.per_run[RUN_MINOR_FAULTS].is_some() && base.per_run[RUN_MINOR_FAULTS].is_some())
        .then(|| why_of(side(r), side(base), (ratio, decided), Per::Run))
        .filter(Why::explains)
}

/// Whether a row's comparison with its baseline still wants rounds: it has none yet, no
/// verdict at the confidence level, or an interval reaching across an edge of the ±band.
pub fn still_open(r: &ExecRow, band: f64) -> bool {
    if !r.status.is_ok() || r.baseline.is_none() {
        return false;
    }
    match (
        r.vs_baseline_ci_low,
        r.vs_baseline_ci_high,
        r.vs_baseline_verdict.as_deref(),
    ) {
        (Some(lo), Some(hi), Some(v)) if v != "undecided" => {
            let across = |edge: f64| lo < edge && hi > edge;
            across(1.0 + band) || across(1.0 - band)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::DEFAULT_LEVEL;
    use crate::model::counts::Rusage;

    #[test]
    fn a_traced_run_is_stated_against_its_untraced_median_and_over_its_interval() {
        let walls: Vec<f64> = (0..9).map(|i| 200e6 + 2e6 * i as f64).collect();
        let u = UntracedTimes::of(&walls, DEFAULT_LEVEL).unwrap();
        let text = u.text(400e6, UntracedTimes::RUNS);
        // The ratio is to the median (208 ms); the range runs over the interval, which
        // holds the median, so the range holds the ratio.
        let (ratio, rest) = text
            .split_once("x the untraced runs' median wall time (")
            .unwrap();
        assert_eq!(ratio, format!("{:.2}", 400.0 / 208.0), "{text}");
        assert!(rest.starts_with("208 ms of 9 runs ["), "{text}");
        let range = rest
            .split("; ")
            .nth(1)
            .unwrap()
            .trim_end_matches(" over it)");
        let (lo, hi) = range.split_once("x–").unwrap();
        let (lo, hi): (f64, f64) = (
            lo.parse().unwrap(),
            hi.trim_end_matches('x').parse().unwrap(),
        );
        assert!(lo <= 400.0 / 208.0 && 400.0 / 208.0 <= hi, "{text}");
        // Nothing to state it against: no words.
        assert!(UntracedTimes::of(&[], DEFAULT_LEVEL).is_none());
        assert!(UntracedTimes::of(&[0.0, 0.0], DEFAULT_LEVEL).is_none());
    }

    fn run(round: u32, wall_ms: u64, user_ms: u64, faults: u64) -> ExecRun {
        ExecRun {
            round,
            position: Some(0),
            wall_ns: wall_ms * 1_000_000,
            usage: Rusage::sample(faults, user_ms * 1_000_000),
            syscalls: None,
            start_unix_ns: None,
            memory: Vec::new(),
            memory_unavailable: None,
            idle_from_ms: None,
            env_pad_bytes: None,
        }
    }

    fn traced(wall_ms: u64, user_ms: u64, faults: u64) -> TracedRun {
        let r = run(0, wall_ms, user_ms, faults);
        TracedRun {
            wall_ns: r.wall_ns,
            usage: r.usage,
        }
    }

    fn allocator(runs: Vec<ExecRun>, t: TracedRun) -> AllocatorRuns {
        AllocatorRuns {
            allocator: "jemalloc".into(),
            preload: None,
            env: Default::default(),
            malloc_from: None,
            version: None,
            knobs_effective: Default::default(),
            failure: None,
            warmup_runs: 0,
            runs,
            traced_syscalls: Some(SyscallCounts {
                madvise: 2931,
                ..Default::default()
            }),
            traced_note: None,
            traced_run: Some(t),
            evidence: None,
            own_allocator: None,
            command_index: None,
        }
    }

    #[test]
    fn a_traced_value_differs_only_beyond_the_range_by_more_than_its_width() {
        let u = [100.0, 104.0, 102.0];
        // Width 4: 96..=108 is as the untraced runs.
        assert_eq!(beyond_spread(&u, 108.0, 0.02, 1.0), Some(false));
        assert_eq!(beyond_spread(&u, 108.5, 0.02, 1.0), Some(true));
        assert_eq!(beyond_spread(&u, 96.0, 0.02, 1.0), Some(false));
        assert_eq!(beyond_spread(&u, 95.5, 0.02, 1.0), Some(true));
        // Runs that agree exactly: the noise threshold and the least margin decide.
        let same = [50.0, 50.0, 50.0];
        assert_eq!(beyond_spread(&same, 52.0, 0.02, 2.0), Some(false));
        assert_eq!(beyond_spread(&same, 53.0, 0.02, 2.0), Some(true));
        let big = [10_000.0, 10_000.0];
        assert_eq!(beyond_spread(&big, 10_150.0, 0.02, 2.0), Some(false));
        assert_eq!(beyond_spread(&big, 10_250.0, 0.02, 2.0), Some(true));
        // One run has no spread.
        assert_eq!(beyond_spread(&[100.0], 500.0, 0.02, 1.0), None);
    }

    /// The calls × the measured cost of a trap is the slow-down a traced run should
    /// show: one that kept its time (a program that runs for a fixed time) is said to
    /// have done other work; one slowed by about that much did the same work, and its
    /// longer wall time is no deviation.
    #[test]
    fn a_traced_run_that_kept_its_time_despite_its_traps_did_other_work() {
        let runs = vec![
            run(1, 500, 480, 9000),
            run(2, 505, 482, 9000),
            run(3, 502, 481, 9000),
        ];
        // 2,931 trapped calls at 1 µs: 2.9 ms expected, less than twice the runs' width
        // (500 to 505 ms): too little to tell.
        let a = allocator(runs.clone(), traced(503, 480, 9000));
        let t = a.traced_run.as_ref().unwrap();
        let counts = a.traced_syscalls.as_ref();
        assert!(time_bound(&runs, t, counts, Some(1_000.0)).is_none());
        // At 100 µs a trap (293 ms expected), the same 503 ms is a fixed-time program.
        let slow = Some(100_000.0);
        let d = time_bound(&runs, t, counts, slow).expect("time-bound");
        assert_eq!(d.figure, "trap_time_ms");
        assert!((d.untraced_median - 293.1).abs() < 0.01, "{d:?}");
        assert!((d.traced - 1.0).abs() < 1e-9, "{d:?}");
        let row = row_of(&a, "ptrace", 0.02, slow, DEFAULT_LEVEL);
        assert!(row.traced_differs.as_ref().unwrap().contains(&d));
        assert!(
            row.syscall_counter.contains("it should have taken about 293 ms longer than their median (its trapped calls × their measured cost) and took 1.00 ms longer"),
            "{}",
            row.syscall_counter
        );
        // Slowed by what its traps cost: the same work, no deviation at all.
        let slowed = allocator(runs.clone(), traced(502 + 293, 480, 9000));
        let row = row_of(&slowed, "ptrace", 0.02, slow, DEFAULT_LEVEL);
        assert_eq!(row.traced_differs, Some(vec![]), "{}", row.syscall_counter);
        assert!(!row.traced_perturbed);
        // Slowed by its traps and with more user time (the tracer's own cost to a
        // program of fixed work): named, but its counts stay the allocator's.
        let costly = allocator(runs.clone(), traced(502 + 293, 600, 9000));
        let row = row_of(&costly, "ptrace", 0.02, slow, DEFAULT_LEVEL);
        assert_eq!(row.traced_differs.as_ref().unwrap()[0].figure, "user_ms");
        assert!(!row.traced_perturbed);
        assert!(row.per_run[crate::model::metric::RUN_MADVISE].is_some());
        assert!(row
            .syscall_counter
            .ends_with("so its counts may not be theirs"));
        // Without a measured cost the wall time alone says it behaved otherwise.
        let row = row_of(&slowed, "ptrace", 0.02, None, DEFAULT_LEVEL);
        assert_eq!(row.traced_differs.unwrap()[0].figure, "wall_ms");
    }

    #[test]
    fn a_fixed_duration_run_that_faulted_more_under_the_tracer_is_said() {
        // larson under jemalloc, as measured: the same 4 s wall time traced or not, but
        // the traced run purged (and faulted back) more: 8,600 faults, beyond the
        // untraced runs' 6,130–7,300 by more than that width.
        let runs = vec![
            run(1, 4010, 3887, 6130),
            run(2, 4011, 3944, 7265),
            run(3, 4012, 3900, 7100),
            run(4, 4010, 3920, 7300),
        ];
        let a = allocator(runs.clone(), traced(4011, 3905, 8600));
        let d = traced_deviations(&runs, a.traced_run.as_ref().unwrap(), None, 0.02).unwrap();
        assert_eq!(
            d.iter().map(|x| x.figure.as_str()).collect::<Vec<_>>(),
            [RUN_MINOR_FAULTS.key]
        );
        assert_eq!(
            (d[0].traced, d[0].untraced_min, d[0].untraced_max),
            (8600.0, 6130.0, 7300.0)
        );
        let row = row_of(&a, "ptrace", 0.02, None, DEFAULT_LEVEL);
        assert_eq!(row.traced_differs, Some(d));
        // Perturbed by tracing: the row holds no memory-syscall count as the
        // allocator's; its words give the traced counts apart.
        assert_eq!(row.per_run[crate::model::metric::RUN_MADVISE], None);
        assert!(row.traced_perturbed);
        let text = &row.syscall_counter;
        assert!(
            text.contains("so its counts are perturbed by tracing and not shown as the allocator's: brk 0, mmap 0, munmap 0, madvise 2,931, mremap 0"),
            "{text}"
        );
        assert!(
            text.starts_with("ptrace: counted in one traced run, 1.00x the untraced runs' median wall time (4.01 s of 4 runs [4.01 s, 4.01 s] (87.5 % interval); 1.00x–1.00x over it); it behaved otherwise than the untraced runs (minor faults 8,600 against 6,130–7,300, 1.20x their median"),
            "{text}"
        );
        // Faults beyond the untraced runs' range by less than its width (1,170):
        // nothing to say.
        let calm = allocator(runs.clone(), traced(4011, 3905, 8400));
        let row = row_of(&calm, "ptrace", 0.02, None, DEFAULT_LEVEL);
        assert_eq!(row.traced_differs, Some(vec![]));
        assert_eq!(row.per_run[crate::model::metric::RUN_MADVISE], Some(2931.0));
        assert!(row
            .syscall_counter
            .contains("were within the untraced runs' range, give or take its width"));
        assert!(!row.syscall_counter.contains("behaved as"));
        // A traced run that got less CPU (the tracer took it) is said too.
        let starved = allocator(runs.clone(), traced(4011, 3500, 7000));
        let d = row_of(&starved, "ptrace", 0.02, None, DEFAULT_LEVEL)
            .traced_differs
            .unwrap();
        assert_eq!(d[0].figure, "user_ms");
    }

    #[test]
    fn one_untraced_run_cannot_tell_and_untraced_counts_are_compared_when_there() {
        let one = allocator(vec![run(1, 100, 90, 500)], traced(300, 90, 5000));
        let row = row_of(&one, "ptrace", 0.02, None, DEFAULT_LEVEL);
        assert_eq!(row.traced_differs, None);
        assert!(
            row.syscall_counter.contains("no spread"),
            "{}",
            row.syscall_counter
        );
        // Untraced runs with their own counts: the traced run's 2,931 memory calls are
        // far beyond their 1,000–1,100.
        let mut runs = vec![run(1, 100, 90, 500), run(2, 100, 90, 500)];
        for (r, madvise) in runs.iter_mut().zip([1000, 1100]) {
            r.syscalls = Some(SyscallCounts {
                madvise,
                ..Default::default()
            });
        }
        let a = allocator(runs, traced(100, 90, 500));
        let d = row_of(&a, "ptrace", 0.02, None, DEFAULT_LEVEL)
            .traced_differs
            .unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].figure, "memory_syscalls");
        // Not traced: no comparison, the counter's name alone.
        let row = row_of(&a, "perf", 0.02, None, DEFAULT_LEVEL);
        assert_eq!(
            (row.traced_differs, row.syscall_counter.as_str()),
            (None, "perf")
        );
    }
}
