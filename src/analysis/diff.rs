//! Two sets of summary rows matched cell by cell: the change of each cell's p50 with an
//! interval and a verdict, the count changes, and the cells found on one side only.
//!
//! The two sides are separate sets of processes, not paired rounds. With each process's
//! p50 at hand (results folders of `run` and `exec`), the ratio is the Hodges–Lehmann
//! shift of the logarithms with its Mann–Whitney interval ([`shift_ratio`]; 95.9 % for
//! six processes a side). With only rows (summary CSVs, compare's JSON), the interval is
//! built from the two medians' intervals: `[new_low / base_high, new_high / base_low]`
//! covers the true ratio whenever both intervals cover their medians, so with probability
//! at least `1 − (1 − c_base) − (1 − c_new)` (Bonferroni; 93.8 % for two six-process
//! cells). Either way a verdict needs the stated coverage (95 %): below it a cell is
//! undecided. Cells without an interval (one process) get the ratio only.

use crate::analysis::stats::{median, shift_ratio, verdict, Interval, Verdict};
use crate::model::metric::{
    Changes, Figures, Metric, RunFigures, BRK, MADVISE, MINOR_FAULTS, MMAP, MREMAP, MUNMAP,
    RUN_BRK, RUN_MADVISE, RUN_MINOR_FAULTS, RUN_MMAP, RUN_MREMAP, RUN_MUNMAP, RUN_PEAK_RSS,
};
use serde::{Deserialize, Serialize};

/// The fields of a summary row that a diff reads (from summary.csv or compare's JSON);
/// everything else in the row is ignored.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct DiffInput {
    pub workload: String,
    pub variant: String,
    pub allocator_spec: String,
    pub size: u64,
    pub threads: u32,
    pub status: String,
    pub p50_ns: Option<f64>,
    #[serde(default)]
    pub p50_ci_low_ns: Option<f64>,
    #[serde(default)]
    pub p50_ci_high_ns: Option<f64>,
    #[serde(default)]
    pub ci_coverage: Option<f64>,
    /// The per-iteration figures the row gives (faults, memory syscalls, …), keyed by
    /// the registry; an exec row's per-run figures in the same places.
    #[serde(flatten)]
    pub per_iter: Figures,
    pub rss_end_bytes: Option<f64>,
    pub allocator_version: Option<String>,
    /// Each process's p50 (ns): a JSON array in compare's JSON, the numbers separated by
    /// spaces in a summary CSV (a JSON array's text in older ones), the runs' wall times for exec results; empty where the input
    /// predates the column.
    #[serde(default, deserialize_with = "numbers")]
    pub process_p50_ns: Vec<f64>,
    /// The command measured (exec results), to say when the two sides ran different
    /// ones.
    #[serde(default)]
    pub command: Option<String>,
    /// compare's mark of the session the row comes from: false when it was interrupted
    /// or --max-time cut its planned rounds (absent in files written before the column).
    #[serde(default)]
    pub complete: Option<bool>,
    /// Why that session stopped early: `SIGINT`, `SIGTERM` or `max-time`.
    #[serde(default)]
    pub stopped_by: Option<String>,
    /// Processes behind the row, and the processes every cell was to get.
    #[serde(default)]
    pub processes: Option<u32>,
    #[serde(default)]
    pub processes_planned: Option<u32>,
    /// Allocation calls per iteration of the measured loop: a cell with none on both
    /// sides is a [`HostReference`] (absent in exec rows and older files).
    #[serde(default)]
    pub allocs_per_iter: Option<f64>,
    /// compare's --jobs and --cpu (absent in other rows and older files).
    #[serde(default)]
    pub jobs: Option<u32>,
    #[serde(default)]
    pub cpu: Option<u32>,
}

/// A list of numbers given as a list (JSON) or as the text of one (a CSV cell), or
/// nothing.
fn numbers<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Numbers {
        List(Vec<f64>),
        /// One process's p50: a CSV cell of one number reads as a number.
        One(f64),
        Text(String),
    }
    match Option::<Numbers>::deserialize(d)? {
        None => Ok(Vec::new()),
        Some(Numbers::List(v)) => Ok(v),
        Some(Numbers::One(v)) => Ok(vec![v]),
        Some(Numbers::Text(t)) if t.trim().is_empty() => Ok(Vec::new()),
        // A JSON array in summary CSVs written before 2026-11-28.
        Some(Numbers::Text(t)) if t.trim_start().starts_with('[') => serde_json::from_str(&t)
            .map_err(|e| {
                serde::de::Error::custom(format!(
                    "process_p50_ns {t:?} is not a list of numbers: {e}"
                ))
            }),
        Some(Numbers::Text(t)) => t
            .split_whitespace()
            .map(|n| {
                n.parse::<f64>().map_err(|e| {
                    serde::de::Error::custom(format!(
                        "process_p50_ns {t:?} is not numbers separated by spaces: {n:?}: {e}"
                    ))
                })
            })
            .collect(),
    }
}

/// Why a side's rows cannot be compared: no rows, a cell given twice, an ok row without
/// a positive p50 (a damaged or hand-edited file, or a column missing). None when they
/// can.
pub fn invalid(rows: &[DiffInput]) -> Option<String> {
    if rows.is_empty() {
        return Some(
            "it holds no rows; expected a results folder, compare's or exec's JSON, or a summary CSV"
                .into(),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, r) in rows.iter().enumerate() {
        let key = r.key();
        if !seen.insert(key.clone()) {
            return Some(format!(
                "the cell {key} is there twice (row {}); give each cell once",
                i + 1
            ));
        }
        if let Some((column, v)) = r.negative() {
            return Some(format!(
                "row {} ({key}): column {column} is {v}, below zero; counts, times and bytes are 0 or more (no measurement gives a negative one: the file was damaged or edited by hand)",
                i + 1
            ));
        }
        if r.status != "ok" && r.status != "failed" {
            return Some(format!(
                "row {} ({key}): status {:?}, expected \"ok\" or \"failed\"",
                i + 1,
                r.status
            ));
        }
        // A time the lab could have measured: at least a picosecond, at most about 11.6
        // days (1e15 ns); a value outside (5e-324, 1e300) would make ratios infinite or
        // NaN.
        let positive =
            |v: Option<f64>| v.is_none_or(|v| v.is_finite() && (1e-3..=1e15).contains(&v));
        if r.status == "ok" {
            match r.p50_ns {
                None => {
                    return Some(format!(
                        "row {} ({key}) is ok but has no p50_ns; expected the p50_ns column of the lab's summary rows",
                        i + 1
                    ))
                }
                Some(p) if !positive(Some(p)) => {
                    return Some(format!(
                        "row {} ({key}): p50_ns {p} is not a number of nanoseconds the lab could have measured (0.001 to 1e15)",
                        i + 1
                    ))
                }
                _ => {}
            }
            if !positive(r.p50_ci_low_ns)
                || !positive(r.p50_ci_high_ns)
                || r.process_p50_ns.iter().any(|v| !positive(Some(*v)))
            {
                return Some(format!(
                    "row {} ({key}): an interval end or a process's p50 is not a number of nanoseconds the lab could have measured (0.001 to 1e15)",
                    i + 1
                ));
            }
            // Counts per iteration and bytes: finite and below 1e15 (a petabyte).
            let plausible = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v.abs() <= 1e15);
            if !r.per_iter.iter().all(|(_, v)| plausible(v)) || !plausible(r.rss_end_bytes) {
                return Some(format!(
                    "row {} ({key}): a count or RSS is not a finite number below 1e15",
                    i + 1
                ));
            }
        }
    }
    None
}

/// Where an exec row's per-run figures go among the per-iteration entries a diff reads
/// (one run of the command is its iteration): faults and each memory syscall.
const EXEC_FIGURES: [(Metric, Metric); 6] = [
    (MINOR_FAULTS, RUN_MINOR_FAULTS),
    (BRK, RUN_BRK),
    (MMAP, RUN_MMAP),
    (MUNMAP, RUN_MUNMAP),
    (MADVISE, RUN_MADVISE),
    (MREMAP, RUN_MREMAP),
];

/// An exec row's per-run figures in the per-iteration entries a diff reads
/// ([`EXEC_FIGURES`]), their sum derived.
fn exec_figures(run: &RunFigures) -> Figures {
    let mut f = Figures::default();
    for (to, from) in EXEC_FIGURES {
        f[to] = run[from];
    }
    f.derive();
    f
}

/// The `workload` of rows made from `alloclab exec` results: a whole command per run.
pub const EXEC_WORKLOAD: &str = "exec";

impl DiffInput {
    /// A row of `alloclab exec` (one allocator's runs of the whole command) in a diff's
    /// terms: the median wall time per run as its p50, with its interval; faults, memory
    /// syscalls and peak RSS per run.
    pub fn from_exec(r: &crate::analysis::command::ExecRow) -> Self {
        let ms = |v: Option<f64>| v.map(|m| m * 1e6);
        DiffInput {
            workload: EXEC_WORKLOAD.into(),
            variant: "per run".into(),
            allocator_spec: r.allocator.clone(),
            size: 0,
            threads: 1,
            status: if r.status.is_ok() { "ok" } else { "failed" }.into(),
            p50_ns: ms(r.wall_median_ms),
            p50_ci_low_ns: ms(r.wall_ci_low_ms),
            p50_ci_high_ns: ms(r.wall_ci_high_ms),
            ci_coverage: r.wall_ci_coverage,
            per_iter: exec_figures(&r.per_run),
            rss_end_bytes: r.per_run[RUN_PEAK_RSS].map(|m| m * RUN_PEAK_RSS.scale),
            allocator_version: r.allocator_version.clone(),
            process_p50_ns: r.run_wall_ms.iter().map(|m| m * 1e6).collect(),
            command: (!r.command.is_empty()).then(|| r.command.clone()),
            complete: r.complete,
            stopped_by: r.stopped_by.clone(),
            processes: Some(r.run_wall_ms.len() as u32),
            processes_planned: r.runs_planned,
            allocs_per_iter: None,
            jobs: None,
            cpu: None,
        }
    }

    /// What identifies the cell across the two sides.
    pub fn key(&self) -> String {
        #[cfg(test)]
        tests::KEYS_MADE.with(|k| k.set(k.get() + 1));
        if self.workload == EXEC_WORKLOAD {
            return format!("{} (whole command, per run)", self.allocator_spec);
        }
        let threads = if self.threads > 1 {
            format!(" threads={}", self.threads)
        } else {
            String::new()
        };
        format!(
            "{} {} {} size={}{threads}",
            self.workload, self.allocator_spec, self.variant, self.size
        )
    }

    fn interval(&self) -> Option<(f64, f64, f64)> {
        Some((self.p50_ci_low_ns?, self.p50_ci_high_ns?, self.ci_coverage?))
    }

    /// The first count (or RSS) of the row below zero, with the column it came from (an
    /// exec row's under exec's own column: `minflt`, `brk`, `peak_rss_mib`): no
    /// measurement gives one.
    fn negative(&self) -> Option<(&'static str, f64)> {
        let exec = self.workload == EXEC_WORKLOAD;
        let column = |m: Metric| match EXEC_FIGURES.iter().find(|(to, _)| to.index == m.index) {
            Some((_, from)) if exec => from.key,
            _ => m.key,
        };
        let rss = if exec {
            RUN_PEAK_RSS.key
        } else {
            "rss_end_bytes"
        };
        self.per_iter
            .iter()
            .map(|(m, v)| (column(m), v))
            .chain([(rss, self.rss_end_bytes)])
            .find_map(|(c, v)| v.filter(|v| *v < 0.0).map(|v| (c, v)))
    }
}

/// One matched cell.
#[derive(Clone, Debug, Serialize)]
pub struct CellChange {
    pub cell: String,
    pub base_p50_ns: Option<f64>,
    pub new_p50_ns: Option<f64>,
    /// new / base p50.
    pub ratio: Option<f64>,
    pub ratio_ci_low: Option<f64>,
    pub ratio_ci_high: Option<f64>,
    /// The interval's coverage (exact for the Mann–Whitney interval, at least this for
    /// Bonferroni's).
    pub ratio_ci_coverage: Option<f64>,
    /// How the ratio and interval were made: "hodges-lehmann" (from each process's p50)
    /// or "medians-bonferroni" (from the two medians' intervals).
    pub ratio_method: Option<&'static str>,
    /// faster / slower / no significant difference; None without intervals.
    pub verdict: Option<Verdict>,
    /// The interval from the two sides' own processes alone, before the between-run
    /// allowance widened it (see [`Drift`]); equal to the interval when nothing was
    /// widened.
    pub within_run_ci_low: Option<f64>,
    pub within_run_ci_high: Option<f64>,
    /// The change in the machine's time per page fault (ns, new − base) this cell's
    /// ratio was read against, from the other allocators' faulting cells (see
    /// [`FaultReference`]); None where it was not.
    pub fault_reference_ns: Option<f64>,
    /// new − base of the faults and memory syscalls per iteration: `<key>_change` of
    /// each registry entry with a spread.
    #[serde(flatten)]
    pub changes: Changes,
    pub rss_end_bytes_change: Option<f64>,
    /// Why the cell could not be compared (a failed side).
    pub note: Option<String>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// The confidence level of its intervals and verdicts.
    #[serde(skip)]
    pub level: f64,
    pub cells: Vec<CellChange>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    /// Allocator versions that differ between the sides, per cell.
    pub version_changes: Vec<String>,
    /// The commands, where the two sides measured different ones (exec results): the
    /// first thing to know about every ratio below.
    pub command_change: Option<String>,
    /// The drift between the two runs as the cells' shifts show it, and what the
    /// intervals were widened by for it.
    pub drift: Drift,
    /// The host's own shift between the runs, from the cells whose loop calls no
    /// allocator, and whether every ratio was read against it.
    pub host: HostReference,
    /// The host's cost of a page fault between the runs, from the cells that fault every
    /// iteration, and which ratios were read against it.
    pub faults: FaultReference,
    /// How the two sides' workers ran, where they ran differently (compare's --jobs or
    /// --cpu): every time differs by that too.
    pub placement_change: Option<String>,
}

/// The host's speed between two runs, read from the cells whose measured loop makes no
/// allocation call on either side (compare's `reuse` cells: one buffer, reused): no
/// allocator change can reach their loop but through where the buffer was placed, so
/// what moves them alike is the machine — measured here, a whole run 4–5 % faster than
/// the next on a quiet host, which called 12.5 % of the cells of identical runs changed.
/// Their median log shift is the host's; every cell's ratio is divided by it and its
/// interval widened by the shift's own uncertainty. Needs [`HOST_MIN_CELLS`] such cells
/// with intervals; fewer are said and nothing is read against them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostReference {
    /// The reference cells: those with no allocation call per iteration on both sides
    /// and an interval.
    pub cells: Vec<String>,
    /// Their median ratio (new / base): the host's shift.
    pub ratio: Option<f64>,
    /// The standard error of its logarithm (the spread of the reference cells' shifts,
    /// or their own intervals, over the square root of their number).
    pub log_se: Option<f64>,
    /// Whether every ratio was divided by it.
    pub applied: bool,
    /// Why not: too few reference cells, or --no-host-reference.
    pub not_applied: Option<String>,
}

/// The fewest reference cells from which [`HostReference`] is read.
pub const HOST_MIN_CELLS: usize = 3;

/// Reads `cells` against the host's shift between the runs (see [`HostReference`]):
/// `reference[i]` says whether cell i is a reference cell. When `apply`, every ratio,
/// interval and within-run interval is divided by the host's ratio, the intervals widened
/// by its uncertainty, and the verdicts given again against `threshold`.
pub fn read_against_host(
    cells: &mut [CellChange],
    reference: &[bool],
    threshold: f64,
    level: f64,
    apply: bool,
) -> HostReference {
    use crate::analysis::stats::normal_quantile;
    // Each reference cell's log shift and its own standard error.
    let refs: Vec<(&CellChange, f64, f64)> = cells
        .iter()
        .zip(reference)
        .filter(|(_, r)| **r)
        .filter_map(|(c, _)| Some((c, c.ratio?.ln(), log_se(c)?)))
        .collect();
    let mut host = HostReference {
        cells: refs.iter().map(|r| r.0.cell.clone()).collect(),
        ..HostReference::default()
    };
    if refs.len() < HOST_MIN_CELLS {
        host.not_applied = Some(format!(
            "{} cell(s) without allocation calls in their loop on both sides; the host's shift needs at least {HOST_MIN_CELLS}",
            refs.len()
        ));
        return host;
    }
    let Some((shift, se)) = median(&refs.iter().map(|r| r.2).collect::<Vec<_>>())
        .and_then(|own| median_and_se(&refs.iter().map(|r| r.1).collect::<Vec<_>>(), own))
    else {
        return host;
    };
    host.ratio = Some(shift.exp());
    host.log_se = Some(se);
    if !apply {
        host.not_applied = Some("--no-host-reference".into());
        return host;
    }
    host.applied = true;
    let h = shift.exp();
    for c in cells.iter_mut() {
        let Some(r) = c.ratio else { continue };
        c.ratio = Some(r / h);
        let z = normal_quantile(0.5 + 0.5 * c.ratio_ci_coverage.unwrap_or(0.95));
        let widen = |end: f64, up: bool| {
            let d = (end.ln() - r.ln()).abs();
            let w = (d * d + (z * se) * (z * se)).sqrt();
            (r.ln() - shift + if up { w } else { -w }).exp()
        };
        for (low, high) in [
            (&mut c.ratio_ci_low, &mut c.ratio_ci_high),
            (&mut c.within_run_ci_low, &mut c.within_run_ci_high),
        ] {
            if let (Some(lo), Some(hi)) = (*low, *high) {
                if lo > 0.0 && hi > 0.0 {
                    (*low, *high) = (Some(widen(lo, false)), Some(widen(hi, true)));
                }
            }
        }
        if let (Some(low), Some(high), Some(coverage)) =
            (c.ratio_ci_low, c.ratio_ci_high, c.ratio_ci_coverage)
        {
            if c.verdict.is_some() {
                c.verdict = Some(verdict(
                    Interval {
                        low,
                        high,
                        coverage,
                    },
                    threshold,
                    level,
                ));
            }
        }
    }
    host
}

/// The host's cost of a page fault between two runs, read from the cells that fault every
/// iteration. Measured here (ten identical `compare --size 1000000` runs, 2-vCPU Xeon VM,
/// 2026-11-29): the faulting cells' processes fall into a fast and a slow mode 35 % apart
/// (5.9 and 8.2 ms for jemalloc out-of-place) whose share moves with the machine over
/// seconds, so a whole run's faulting cells can be 10–23 % faster than the next run's
/// while the cells that do not fault stay within a few per cent; one process's residual
/// correlates with the other allocators' faulting cells of its round (median ρ 0.49).
/// Such a shift is the kernel's and the host's, not an allocator's — but each cell
/// catches it differently, so the reuse cells ([`HostReference`]) cannot tell it.
///
/// Each faulting allocator's change in time per fault (`base p50 × (ratio − 1) / faults`
/// over its cells that fault as often in both runs: their median, with its standard
/// error) is an estimate of the host's. Only when at least [`FAULT_MIN_ALLOCATORS`]
/// allocators give one and **every one agrees with the rest** (none beyond them by more
/// than its error allows at the confidence level, Bonferroni over the allocators) is it
/// taken as the host's: then each faulting cell is read against the inverse-variance
/// mean of the *other* allocators' — their shift times its own faults in NEW taken off
/// its ratio, its interval widened by that mean's error. An allocator that changed stands
/// out from the rest and stops it: all cells are then left as measured, so one
/// allocator's change is never read into another's cells. What it gives up, by
/// construction: a change that every faulting allocator shares (a new kernel, huge pages
/// for all) is read as the host's — the `faults:` line says so, and
/// `--no-fault-reference` (or `--no-host-reference`) reads as measured. When the cells
/// that allocate without faulting moved beyond the noise threshold alike (their median's
/// interval outside it), the change is under every allocator, and nothing is read
/// against it either. Lab workloads only: rows that say their allocation calls.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FaultReference {
    /// The reference cells: faulting as often on both sides (within 1 %), with an interval.
    pub cells: Vec<String>,
    /// Each faulting allocator's change in time per fault, from its reference cells.
    pub allocators: Vec<AllocatorFaultShift>,
    /// The inverse-variance mean of the allocators' changes per fault, new − base, in ns.
    pub ns_per_fault: Option<f64>,
    /// The standard error of that mean, in ns.
    pub se_ns: Option<f64>,
    /// The median ratio of the cells that allocate without faulting (their shift tells a
    /// change under every allocator from the host's cost of a fault).
    pub others_ratio: Option<f64>,
    /// How many cells' ratios were read against the other allocators' change.
    pub read: usize,
    /// Faulting cells left as measured although it was applied: the shift would take
    /// their interval below zero.
    pub skipped: usize,
    /// Whether any ratio was read against it.
    pub applied: bool,
    /// Why not: too few faulting allocators, allocators that moved differently, the cells
    /// that allocate without faulting moved alike (a change under every allocator), rows
    /// without allocation counts, or --no-fault-reference.
    pub not_applied: Option<String>,
}

/// One allocator's change in time per fault between the runs.
#[derive(Clone, Debug, Serialize)]
pub struct AllocatorFaultShift {
    pub allocator: String,
    /// Its reference cells.
    pub cells: usize,
    /// The median of their changes per fault (ns).
    pub ns_per_fault: f64,
    /// Its standard error (ns).
    pub se_ns: f64,
}

/// The fewest faulting allocators from which [`FaultReference`] is read: with two, one
/// allocator's change could not be told from the host's.
pub const FAULT_MIN_ALLOCATORS: usize = 3;

/// The fewest cells that allocate without faulting that tell a change under every
/// allocator from the host's cost of a fault.
pub const FAULT_MIN_CALM_CELLS: usize = 3;

/// What [`read_against_fault_cost`] knows of a cell beyond its change: the faults per
/// iteration on both sides and its allocator (the spec before any `:knob`); None for a
/// cell that is not a lab workload's.
#[derive(Clone, Debug)]
pub struct FaultInfo {
    pub base_faults: f64,
    pub new_faults: f64,
    pub allocator: String,
    /// Whether its loop calls the allocator on both sides.
    pub allocates: bool,
}

/// A cell's interval as a log standard error (half-width over the normal quantile of its
/// coverage), when it has one.
fn log_se(c: &CellChange) -> Option<f64> {
    use crate::analysis::stats::normal_quantile;
    let (r, lo, hi, cov) = (
        c.ratio?,
        c.ratio_ci_low?,
        c.ratio_ci_high?,
        c.ratio_ci_coverage?,
    );
    (r > 0.0 && lo > 0.0 && hi > 0.0 && cov > 0.0 && cov < 1.0)
        .then(|| (0.5 * (hi.ln() - lo.ln())).max(MIN_HALF_WIDTH) / normal_quantile(0.5 + 0.5 * cov))
}

/// The median of `v` and its standard error: 1.2533 σ / √n, σ from the MAD, at least
/// `own` / √n (the values' own uncertainty).
fn median_and_se(v: &[f64], own: f64) -> Option<(f64, f64)> {
    let m = median(v)?;
    let mad = median(&v.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())?;
    let n = (v.len() as f64).sqrt();
    Some((m, (1.2533 * 1.4826 * mad / n).max(own / n)))
}

/// The inverse-variance mean of estimates with standard errors, and its standard error.
fn weighted_mean<'a>(v: impl Iterator<Item = &'a AllocatorFaultShift>) -> Option<(f64, f64)> {
    let (mut sw, mut swx) = (0.0, 0.0);
    for a in v {
        let w = 1.0 / (a.se_ns * a.se_ns).max(f64::MIN_POSITIVE);
        sw += w;
        swx += w * a.ns_per_fault;
    }
    (sw > 0.0).then(|| (swx / sw, 1.0 / sw.sqrt()))
}

/// Reads each faulting cell against the other allocators' change in time per fault (see
/// [`FaultReference`]); `info[i]` describes cell i, and `unlabelled` counts the cells
/// that fault without saying their allocation calls (older files). When `apply`, the
/// ratios, intervals and within-run intervals of the cells read are moved and widened and
/// their verdicts given again against `threshold`.
pub fn read_against_fault_cost(
    cells: &mut [CellChange],
    info: &[Option<FaultInfo>],
    unlabelled: usize,
    threshold: f64,
    level: f64,
    apply: bool,
) -> FaultReference {
    use crate::analysis::stats::normal_quantile;
    // A reference cell's change per fault (ns) and its own standard error.
    let per_fault = |c: &CellChange, f: &FaultInfo| -> Option<(f64, f64)> {
        let (b, r, se) = (c.base_p50_ns?, c.ratio?, log_se(c)?);
        (f.base_faults >= 1.0 && (f.new_faults - f.base_faults).abs() <= 0.01 * f.base_faults)
            .then(|| (b * (r - 1.0) / f.base_faults, b * r * se / f.base_faults))
    };
    let refs: Vec<(usize, &str, f64, f64)> = cells
        .iter()
        .zip(info)
        .enumerate()
        .filter_map(|(i, (c, f))| {
            let f = f.as_ref()?;
            let (d, se) = per_fault(c, f)?;
            Some((i, f.allocator.as_str(), d, se))
        })
        .collect();
    let mut fr = FaultReference {
        cells: refs.iter().map(|r| cells[r.0].cell.clone()).collect(),
        ..FaultReference::default()
    };
    let mut names: Vec<&str> = refs.iter().map(|r| r.1).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let of: Vec<&(usize, &str, f64, f64)> = refs.iter().filter(|r| r.1 == name).collect();
        let own = median(&of.iter().map(|r| r.3).collect::<Vec<_>>());
        if let Some((d, se)) =
            own.and_then(|o| median_and_se(&of.iter().map(|r| r.2).collect::<Vec<_>>(), o))
        {
            fr.allocators.push(AllocatorFaultShift {
                allocator: name.to_string(),
                cells: of.len(),
                ns_per_fault: d,
                se_ns: se,
            });
        }
    }
    if let Some((d, se)) = weighted_mean(fr.allocators.iter()) {
        fr.ns_per_fault = Some(d);
        fr.se_ns = Some(se);
    }
    let k = fr.allocators.len();
    if k < FAULT_MIN_ALLOCATORS {
        fr.not_applied = Some(if refs.is_empty() && unlabelled > 0 {
            format!("{unlabelled} faulting cell(s) without allocation counts (written before the lab recorded them)")
        } else {
            format!(
                "{k} allocator(s) fault as often in both runs; telling the host's cost of a fault from one allocator's change needs at least {FAULT_MIN_ALLOCATORS}"
            )
        });
        return fr;
    }
    // Every allocator against the rest: one that stands out changed.
    let crit = normal_quantile(1.0 - (1.0 - level) / (2.0 * k as f64));
    let apart = fr.allocators.iter().any(|a| {
        let rest = weighted_mean(fr.allocators.iter().filter(|o| o.allocator != a.allocator));
        rest.is_some_and(|(d, se)| {
            (a.ns_per_fault - d).abs() > crit * (a.se_ns * a.se_ns + se * se).sqrt()
        })
    });
    if apart {
        let each: Vec<String> = fr
            .allocators
            .iter()
            .map(|a| {
                format!(
                    "{} {:+.0} ± {:.0}",
                    a.allocator,
                    a.ns_per_fault,
                    1.96 * a.se_ns
                )
            })
            .collect();
        fr.not_applied = Some(format!(
            "the faulting allocators moved differently ({} ns a fault): a change in some of them, not the host's cost of a fault",
            each.join(", ")
        ));
        return fr;
    }
    // A change under every allocator (the lab's own code, its compiler) moves the cells
    // that allocate without faulting too: then the faulting cells' shift is that change.
    let calm: Vec<(f64, f64)> = cells
        .iter()
        .zip(info)
        .filter(|(_, f)| {
            f.as_ref()
                .is_some_and(|f| f.allocates && f.base_faults < 1.0 && f.new_faults < 1.0)
        })
        .filter_map(|(c, _)| Some((c.ratio?.ln(), log_se(c)?)))
        .collect();
    let calm_shift = median(&calm.iter().map(|c| c.1).collect::<Vec<_>>())
        .and_then(|o| median_and_se(&calm.iter().map(|c| c.0).collect::<Vec<_>>(), o));
    fr.others_ratio = calm_shift.map(|(m, _)| m.exp());
    let z_level = normal_quantile(0.5 + 0.5 * level);
    match calm_shift {
        _ if calm.len() < FAULT_MIN_CALM_CELLS => {
            fr.not_applied = Some(format!(
                "{} cell(s) allocate without faulting; at least {FAULT_MIN_CALM_CELLS} tell a change under every allocator from the host's cost of a fault",
                calm.len()
            ));
            return fr;
        }
        Some((m, se)) if m.abs() - z_level * se > (1.0 + threshold).ln() => {
            fr.not_applied = Some(format!(
                "the {} cells that allocate without faulting moved by {:+.1} % alike too: a change under every allocator, not the cost of a fault",
                calm.len(),
                100.0 * (m.exp() - 1.0)
            ));
            return fr;
        }
        _ => {}
    }
    if !apply {
        fr.not_applied = Some("--no-fault-reference".into());
        return fr;
    }
    for i in 0..cells.len() {
        let Some(f) = info[i].as_ref() else { continue };
        let c = &cells[i];
        let (Some(b), Some(r), Some(cov)) = (c.base_p50_ns, c.ratio, c.ratio_ci_coverage) else {
            continue;
        };
        if f.base_faults < 1.0 || f.new_faults < 1.0 || b <= 0.0 || log_se(c).is_none() {
            continue;
        }
        let Some((delta, se)) =
            weighted_mean(fr.allocators.iter().filter(|a| a.allocator != f.allocator))
        else {
            continue;
        };
        // In units of the base p50: what the host's fault cost moved this cell by.
        let shift = f.new_faults * delta / b;
        let moved = r - shift;
        let z = normal_quantile(0.5 + 0.5 * cov);
        let widen = f.new_faults * se / b / moved.max(f64::MIN_POSITIVE) * z;
        // Both intervals moved by the shift, then widened by its uncertainty; a cell whose
        // interval would reach below zero is left as measured.
        let moved_interval = |lo: Option<f64>, hi: Option<f64>| -> Option<(f64, f64)> {
            let (lo, hi) = (lo? - shift, hi? - shift);
            (moved > 0.0 && lo > 0.0 && hi > 0.0).then(|| {
                let (dl, dh) = (moved.ln() - lo.ln(), hi.ln() - moved.ln());
                (
                    (moved.ln() - (dl * dl + widen * widen).sqrt()).exp(),
                    (moved.ln() + (dh * dh + widen * widen).sqrt()).exp(),
                )
            })
        };
        let Some((low, high)) = moved_interval(c.ratio_ci_low, c.ratio_ci_high) else {
            fr.skipped += 1;
            continue;
        };
        let within = moved_interval(c.within_run_ci_low, c.within_run_ci_high);
        let c = &mut cells[i];
        c.ratio = Some(moved);
        (c.ratio_ci_low, c.ratio_ci_high) = (Some(low), Some(high));
        if let Some((lo, hi)) = within {
            (c.within_run_ci_low, c.within_run_ci_high) = (Some(lo), Some(hi));
        }
        c.fault_reference_ns = Some(delta);
        if c.verdict.is_some() {
            c.verdict = Some(verdict(
                Interval {
                    low,
                    high,
                    coverage: cov,
                },
                threshold,
                level,
            ));
        }
        fr.read += 1;
    }
    fr.applied = fr.read > 0;
    if !fr.applied {
        fr.not_applied = Some(format!(
            "every faulting cell's interval would reach below zero ({} left as measured)",
            fr.skipped
        ));
    }
    fr
}

/// Between-run drift. Two separate runs differ by more than each run's own noise: the
/// machine's state (the kernel's page allocator, caches, frequency, neighbours) moves
/// between them, and it moves cells unequally — measured here, the cells that fault or
/// unmap moved by up to 18 % between identical compare runs while cells that allocate
/// nothing in their loop moved under 1.2 %. The intervals of one run cannot see that.
///
/// The estimate: each cell's log shift minus the median shift of all cells, divided by
/// its within-run standard error (the interval's half-width over the normal quantile of
/// its coverage). If the intervals held the whole run-to-run variation, these would
/// spread as a standard normal; their robust spread (1.4826 × MAD) says how many times
/// wider they really are. Every interval is widened by that factor (never narrowed),
/// around its own estimate. A shift common to all cells is left as it is (it may be the
/// change under test, e.g. a new allocator version under every cell, and is not spread);
/// a change in a minority of the cells moves the median and the MAD little. Needs
/// [`DRIFT_MIN_CELLS`] cells with intervals; fewer are said and left alone.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Drift {
    /// Cells with an interval on both sides: what the estimate stands on.
    pub cells: usize,
    /// The median ratio of those cells (new / base): the shift common to all.
    pub common_ratio: Option<f64>,
    /// The cells' robust spread around that shift in units of their own within-run
    /// standard errors (1: the intervals explain the differences).
    pub spread: Option<f64>,
    /// What every interval was widened by (the spread, at least 1); None: not applied.
    pub widened_by: Option<f64>,
    /// Why nothing was widened: too few cells, or --no-drift-allowance.
    pub not_applied: Option<String>,
}

/// The fewest cells with intervals from which [`Drift`] is estimated.
pub const DRIFT_MIN_CELLS: usize = 8;

/// A log interval's half-width below this (0.05 %: the histograms' resolution at three
/// significant digits) is taken as this, so that a cell whose processes all gave the same
/// p50 does not weigh as infinitely precise.
const MIN_HALF_WIDTH: f64 = 5e-4;

/// The drift of `cells` ([`Drift`]), with the factor to widen by when `apply`.
pub fn estimate_drift(cells: &[CellChange], apply: bool) -> Drift {
    // Each cell's log shift and its within-run standard error.
    let logs: Vec<(f64, f64)> = cells
        .iter()
        .filter_map(|c| Some((c.ratio?.ln(), log_se(c)?)))
        .collect();
    let mut drift = Drift {
        cells: logs.len(),
        ..Drift::default()
    };
    if logs.len() < DRIFT_MIN_CELLS {
        drift.not_applied = Some(format!(
            "{} cell(s) with an interval; the between-run spread needs at least {DRIFT_MIN_CELLS}",
            logs.len()
        ));
        return drift;
    }
    let Some(mu) = median(&logs.iter().map(|x| x.0).collect::<Vec<_>>()) else {
        return drift;
    };
    let z: Vec<f64> = logs.iter().map(|(d, se)| (d - mu) / se).collect();
    let Some(zm) = median(&z) else { return drift };
    let Some(mad) = median(&z.iter().map(|x| (x - zm).abs()).collect::<Vec<_>>()) else {
        return drift;
    };
    let spread = 1.4826 * mad;
    drift.common_ratio = Some(mu.exp());
    drift.spread = Some(spread);
    if !apply {
        drift.not_applied = Some("--no-drift-allowance".into());
        return drift;
    }
    drift.widened_by = Some(spread.max(1.0));
    drift
}

/// Widens every interval of `cells` by the factor `drift` gives (see [`Drift`]), around
/// its own estimate, and gives the verdicts again against `threshold`.
pub fn widen_for_drift(cells: &mut [CellChange], drift: &Drift, threshold: f64, level: f64) {
    let Some(k) = drift.widened_by.filter(|k| *k > 1.0) else {
        return;
    };
    for c in cells.iter_mut().filter(|c| log_se(c).is_some()) {
        let (Some(r), Some(lo), Some(hi), Some(cov)) = (
            c.ratio,
            c.ratio_ci_low,
            c.ratio_ci_high,
            c.ratio_ci_coverage,
        ) else {
            continue;
        };
        let d = r.ln();
        // From at least the histograms' resolution: an interval of zero width (every
        // process gave the same p50) widens too.
        let low = (d - (d - lo.ln()).max(MIN_HALF_WIDTH) * k).exp();
        let high = (d + (hi.ln() - d).max(MIN_HALF_WIDTH) * k).exp();
        c.ratio_ci_low = Some(low);
        c.ratio_ci_high = Some(high);
        c.verdict = Some(verdict(
            Interval {
                low,
                high,
                coverage: cov,
            },
            threshold,
            level,
        ));
    }
}

impl Diff {
    /// Cells significantly slower in NEW.
    pub fn regressions(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.verdict == Some(Verdict::Slower))
            .count()
    }
}

/// Matches `new` against `base` by workload, allocator spec, variant, size and threads:
/// each row's key is made once and looked up in a hash map, so the time grows with the
/// number of cells, not its square. Asks `stop` between cells (a cell with many processes
/// a side costs their product; the caller passes the interrupt flag); None when it said
/// yes. With
/// `drift_allowance`, the intervals are widened by the between-run spread ([`Drift`]).
pub fn diff(
    base: &[DiffInput],
    new: &[DiffInput],
    threshold: f64,
    level: f64,
    drift_allowance: bool,
    host_reference: bool,
    stop: &dyn Fn() -> bool,
) -> Option<Diff> {
    let readings = Readings {
        drift_allowance,
        host_reference,
        fault_reference: host_reference,
    };
    diff_with(base, new, threshold, level, readings, stop)
}

/// What [`diff_with`] reads the ratios against, each on by default.
#[derive(Clone, Copy, Debug)]
pub struct Readings {
    /// Widen the intervals by the between-run drift ([`Drift`]).
    pub drift_allowance: bool,
    /// Read every ratio against the host's speed ([`HostReference`]).
    pub host_reference: bool,
    /// Read each faulting cell against the other allocators' cost of a fault
    /// ([`FaultReference`]).
    pub fault_reference: bool,
}

/// [`diff`], with each reading chosen.
pub fn diff_with(
    base: &[DiffInput],
    new: &[DiffInput],
    threshold: f64,
    level: f64,
    readings: Readings,
    stop: &dyn Fn() -> bool,
) -> Option<Diff> {
    let Readings {
        drift_allowance,
        host_reference,
        fault_reference,
    } = readings;
    use std::collections::{HashMap, HashSet};
    let base_keys: Vec<String> = base.iter().map(DiffInput::key).collect();
    let new_keys: Vec<String> = new.iter().map(DiffInput::key).collect();
    // The first row of a key wins, as a search from the front did (`invalid` refuses a
    // cell given twice before a diff is made).
    let mut new_index: HashMap<&str, usize> = HashMap::with_capacity(new.len());
    for (j, k) in new_keys.iter().enumerate() {
        new_index.entry(k.as_str()).or_insert(j);
    }
    let base_set: HashSet<&str> = base_keys.iter().map(String::as_str).collect();
    let mut cells = Vec::new();
    let mut reference = Vec::new();
    let mut fault_info = Vec::new();
    let mut version_changes = Vec::new();
    for (b, key) in base.iter().zip(&base_keys) {
        if stop() {
            return None;
        }
        let Some(&j) = new_index.get(key.as_str()) else {
            continue;
        };
        let n = &new[j];
        if b.allocator_version != n.allocator_version {
            version_changes.push(format!(
                "{key}: {} → {}",
                b.allocator_version.as_deref().unwrap_or("unknown"),
                n.allocator_version.as_deref().unwrap_or("unknown")
            ));
        }
        cells.push(cell_change(key, b, n, threshold, level));
        reference.push(b.allocs_per_iter == Some(0.0) && n.allocs_per_iter == Some(0.0));
        fault_info.push(
            match (
                b.allocs_per_iter,
                b.per_iter[MINOR_FAULTS],
                n.per_iter[MINOR_FAULTS],
            ) {
                (Some(_), Some(base_faults), Some(new_faults)) if n.allocs_per_iter.is_some() => {
                    Some(FaultInfo {
                        base_faults,
                        new_faults,
                        allocator: b.allocator_spec.split(':').next().unwrap_or("").to_string(),
                        allocates: b.allocs_per_iter > Some(0.0) && n.allocs_per_iter > Some(0.0),
                    })
                }
                _ => None,
            },
        );
    }
    let command = |rows: &[DiffInput]| rows.iter().find_map(|r| r.command.clone());
    let command_change = match (command(base), command(new)) {
        (Some(b), Some(n)) if b != n => Some(format!("{b} → {n}")),
        _ => None,
    };
    let host = read_against_host(&mut cells, &reference, threshold, level, host_reference);
    let placement_change = placement(base)
        .zip(placement(new))
        .filter(|(b, n)| b != n)
        .map(|(b, n)| format!("{b} in BASE, {n} in NEW"));
    // The drift's spread is read before the fault reference moves the faulting cells,
    // so that a change under many allocators' cells still widens nothing it should not.
    let drift = estimate_drift(&cells, drift_allowance);
    let unlabelled = base
        .iter()
        .zip(&base_keys)
        .filter(|(b, k)| {
            b.allocs_per_iter.is_none()
                && b.workload != EXEC_WORKLOAD
                && b.per_iter[MINOR_FAULTS].is_some_and(|f| f >= 1.0)
                && new_index.contains_key(k.as_str())
        })
        .count();
    let faults = read_against_fault_cost(
        &mut cells,
        &fault_info,
        unlabelled,
        threshold,
        level,
        fault_reference,
    );
    widen_for_drift(&mut cells, &drift, threshold, level);
    Some(Diff {
        level,
        drift,
        host,
        faults,
        placement_change,
        cells,
        only_in_base: base_keys
            .iter()
            .filter(|k| !new_index.contains_key(k.as_str()))
            .cloned()
            .collect(),
        only_in_new: new_keys
            .iter()
            .filter(|k| !base_set.contains(k.as_str()))
            .cloned()
            .collect(),
        version_changes,
        command_change,
    })
}

/// How a side's workers ran, from compare's rows (None for rows that do not say).
fn placement(rows: &[DiffInput]) -> Option<String> {
    let r = rows.iter().find(|r| r.jobs.is_some())?;
    Some(match (r.jobs.unwrap_or(1), r.cpu) {
        (_, Some(c)) => format!("every worker on CPU {c} (--cpu {c})"),
        (1, None) => "one worker at a time".into(),
        (j, None) => format!("{j} workers at once (--jobs {j})"),
    })
}

/// One matched cell: the ratio with its interval and verdict, and the count changes.
fn cell_change(key: &str, b: &DiffInput, n: &DiffInput, threshold: f64, level: f64) -> CellChange {
    let failed = [("BASE", b), ("NEW", n)]
        .iter()
        .filter(|(_, r)| r.status != "ok" || r.p50_ns.is_none())
        .map(|(side, _)| *side)
        .collect::<Vec<_>>();
    let change = |f: fn(&DiffInput) -> Option<f64>| Some(f(n)? - f(b)?);
    let mut c = CellChange {
        cell: key.to_string(),
        base_p50_ns: b.p50_ns,
        new_p50_ns: n.p50_ns,
        ratio: None,
        ratio_ci_low: None,
        ratio_ci_high: None,
        ratio_ci_coverage: None,
        verdict: None,
        within_run_ci_low: None,
        within_run_ci_high: None,
        fault_reference_ns: None,
        ratio_method: None,
        changes: Changes::between(&b.per_iter, &n.per_iter),
        rss_end_bytes_change: change(|r| r.rss_end_bytes),
        note: (!failed.is_empty()).then(|| format!("failed in {}", failed.join(" and "))),
    };
    if failed.is_empty() && b.process_p50_ns.len() >= 2 && n.process_p50_ns.len() >= 2 {
        if let Some((ratio, ci)) = shift_ratio(&b.process_p50_ns, &n.process_p50_ns, level) {
            c.ratio = Some(ratio);
            c.ratio_ci_low = Some(ci.low);
            c.ratio_ci_high = Some(ci.high);
            c.ratio_ci_coverage = Some(ci.coverage);
            c.ratio_method = Some("hodges-lehmann");
            c.within_run_ci_low = Some(ci.low);
            c.within_run_ci_high = Some(ci.high);
            c.verdict = Some(verdict(ci, threshold, level));
        }
    } else if failed.is_empty() {
        let (bp, np) = (b.p50_ns.unwrap_or(0.0), n.p50_ns.unwrap_or(0.0));
        if bp > 0.0 {
            c.ratio = Some(np / bp);
        }
        if let (Some((bl, bh, bc)), Some((nl, nh, nc))) = (b.interval(), n.interval()) {
            if bl > 0.0 && bh > 0.0 {
                let ci = Interval {
                    low: nl / bh,
                    high: nh / bl,
                    coverage: (1.0 - (1.0 - bc) - (1.0 - nc)).max(0.0),
                };
                c.ratio_ci_low = Some(ci.low);
                c.ratio_ci_high = Some(ci.high);
                c.ratio_ci_coverage = Some(ci.coverage);
                c.ratio_method = Some("medians-bonferroni");
                c.within_run_ci_low = Some(ci.low);
                c.within_run_ci_high = Some(ci.high);
                c.verdict = Some(verdict(ci, threshold, level));
            }
        } else {
            c.note = Some("one process on a side: no interval".into());
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::DEFAULT_LEVEL;

    thread_local! {
        /// Keys made by [`DiffInput::key`] on this thread: what a match costs.
        pub(super) static KEYS_MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn row(alloc: &str, variant: &str, p50: f64, half: f64, faults: f64) -> DiffInput {
        let mut per_iter = Figures::default();
        per_iter[MINOR_FAULTS] = Some(faults);
        per_iter[BRK] = Some(0.0);
        per_iter[MMAP] = Some(0.0);
        per_iter[MUNMAP] = Some(0.0);
        per_iter[MADVISE] = Some(0.0);
        per_iter[MREMAP] = Some(0.0);
        per_iter.derive();
        DiffInput {
            workload: "scale".into(),
            variant: variant.into(),
            allocator_spec: alloc.into(),
            size: 1000,
            threads: 1,
            status: "ok".into(),
            p50_ns: Some(p50),
            p50_ci_low_ns: Some(p50 - half),
            p50_ci_high_ns: Some(p50 + half),
            ci_coverage: Some(62.0 / 64.0),
            per_iter,
            rss_end_bytes: Some(1e6),
            allocator_version: Some("glibc 2.36".into()),
            // Six processes spread evenly over the interval.
            command: None,
            process_p50_ns: (0..6)
                .map(|i| p50 - half + 2.0 * half * i as f64 / 5.0)
                .collect(),
            ..DiffInput::default()
        }
    }

    /// Five allocators: three fault every iteration in two cells each, two do not; every
    /// allocator has a reuse cell (no allocation call) and an in-place cell that allocates
    /// without faulting. `new(allocator, variant)` gives the NEW side's p50 for a cell
    /// whose BASE p50 is 1 ms.
    fn fault_sides(new: &dyn Fn(&str, &str) -> f64) -> (Vec<DiffInput>, Vec<DiffInput>) {
        let cell = |alloc: &str, variant: &str, p50: f64| {
            let (faults, allocs) = match variant {
                "reuse" => (0.0, 0.0),
                "in-place" => (0.0, 1.0),
                _ => (1000.0, 2.0),
            };
            DiffInput {
                allocs_per_iter: Some(allocs),
                ..row(alloc, variant, p50, p50 * 0.005, faults)
            }
        };
        let cells = |p50: &dyn Fn(&str, &str) -> f64| -> Vec<DiffInput> {
            let mut rows = Vec::new();
            for a in ["system", "jemalloc", "rpmalloc", "mimalloc", "tcmalloc"] {
                let faulting = ["system", "jemalloc", "rpmalloc"].contains(&a);
                let variants: &[&str] = if faulting {
                    &["reuse", "in-place", "out-of-place", "fused"]
                } else {
                    &["reuse", "in-place"]
                };
                rows.extend(variants.iter().map(|v| cell(a, v, p50(a, v))));
            }
            rows
        };
        (cells(&|_, _| 1e6), cells(new))
    }

    fn verdict_of(d: &Diff, cell: &str) -> Option<Verdict> {
        d.cells
            .iter()
            .find(|c| c.cell.contains(cell))
            .unwrap()
            .verdict
    }

    #[test]
    fn faulting_cells_are_read_against_the_other_allocators_cost_of_a_fault() {
        let faults = |v: &str| !matches!(v, "reuse" | "in-place");
        let on = Readings {
            drift_allowance: false,
            host_reference: true,
            fault_reference: true,
        };
        let off = Readings {
            fault_reference: false,
            ..on
        };
        // The host's fault cost rose by 200 ns: every faulting cell (1,000 faults) is
        // 200 µs slower, nothing else moved.
        let (base, new) = fault_sides(&|_, v| if faults(v) { 1.2e6 } else { 1e6 });
        let raw = diff_with(&base, &new, 0.02, DEFAULT_LEVEL, off, &|| false).unwrap();
        assert_eq!(
            verdict_of(&raw, "jemalloc out-of-place"),
            Some(Verdict::Slower)
        );
        assert_eq!(
            raw.faults.not_applied.as_deref(),
            Some("--no-fault-reference")
        );
        let d = diff_with(&base, &new, 0.02, DEFAULT_LEVEL, on, &|| false).unwrap();
        assert!(d.faults.applied, "{:?}", d.faults);
        assert_eq!((d.faults.cells.len(), d.faults.read), (6, 6));
        assert!(
            (d.faults.ns_per_fault.unwrap() - 200.0).abs() < 1.0,
            "{:?}",
            d.faults
        );
        for c in &d.cells {
            assert_eq!(c.verdict, Some(Verdict::NoSignificantDifference), "{c:?}");
            let (lo, r, hi) = (
                c.ratio_ci_low.unwrap(),
                c.ratio.unwrap(),
                c.ratio_ci_high.unwrap(),
            );
            assert!(lo <= r && r <= hi && (r - 1.0).abs() < 0.01, "{c:?}");
            assert!(c.within_run_ci_low.unwrap() <= r && r <= c.within_run_ci_high.unwrap());
            let read = c.fault_reference_ns.is_some();
            let faulting = c.cell.contains("out-of-place") || c.cell.contains("fused");
            assert_eq!(read, faulting, "{c:?}");
        }
        // One allocator's faulting cells 20 % slower: it stands out from the two others,
        // so nothing is read against any of them — its cells stay slower, and its change
        // is not read into the others' (which a median over cells would: two of its
        // cells against one of each other allocator).
        let (base, new) = fault_sides(&|a, v| {
            if a == "jemalloc" && faults(v) {
                1.2e6
            } else {
                1e6
            }
        });
        let d = diff_with(&base, &new, 0.02, DEFAULT_LEVEL, on, &|| false).unwrap();
        assert!(!d.faults.applied, "{:?}", d.faults);
        assert!(d
            .faults
            .not_applied
            .as_deref()
            .unwrap()
            .contains("moved differently"));
        for c in &d.cells {
            let want = if c.cell.contains("jemalloc") && faults(c.cell.split(' ').nth(2).unwrap()) {
                Verdict::Slower
            } else {
                Verdict::NoSignificantDifference
            };
            assert_eq!(c.verdict, Some(want), "{c:?}");
        }
        // Two of the three changed alike: the third stands out; both stay slower and the
        // third is not called faster.
        let (base, new) = fault_sides(&|a, v| {
            if a != "system" && faults(v) {
                1.3e6
            } else {
                1e6
            }
        });
        let d = diff_with(&base, &new, 0.02, DEFAULT_LEVEL, on, &|| false).unwrap();
        assert!(!d.faults.applied, "{:?}", d.faults);
        assert_eq!(verdict_of(&d, "rpmalloc fused"), Some(Verdict::Slower));
        assert_eq!(
            verdict_of(&d, "system out-of-place"),
            Some(Verdict::NoSignificantDifference)
        );
        // Every allocating cell 20 % slower, those that do not fault too: a change under
        // every allocator, not the cost of a fault. Nothing is read against it.
        let (base, new) = fault_sides(&|_, v| if v == "reuse" { 1e6 } else { 1.2e6 });
        let d = diff_with(&base, &new, 0.02, DEFAULT_LEVEL, on, &|| false).unwrap();
        assert!(!d.faults.applied, "{:?}", d.faults);
        assert!(
            d.faults
                .not_applied
                .as_deref()
                .unwrap()
                .contains("alike too"),
            "{:?}",
            d.faults
        );
        assert_eq!(verdict_of(&d, "system out-of-place"), Some(Verdict::Slower));
        // Two faulting allocators only: one's change could not be told from the host's:
        // said, and left as measured.
        let (base, new) = fault_sides(&|_, v| if faults(v) { 1.2e6 } else { 1e6 });
        let keep = |rows: Vec<DiffInput>| -> Vec<DiffInput> {
            rows.into_iter()
                .filter(|r| r.allocator_spec != "rpmalloc")
                .collect()
        };
        let d = diff_with(&keep(base), &keep(new), 0.02, DEFAULT_LEVEL, on, &|| false).unwrap();
        assert!(!d.faults.applied, "{:?}", d.faults);
        assert!(d
            .faults
            .not_applied
            .as_deref()
            .unwrap()
            .contains("needs at least 3"));
        assert_eq!(verdict_of(&d, "system out-of-place"), Some(Verdict::Slower));
        // exec rows (no allocation counts) are never read against it.
        let strip = |rows: Vec<DiffInput>| -> Vec<DiffInput> {
            rows.into_iter()
                .map(|r| DiffInput {
                    allocs_per_iter: None,
                    ..r
                })
                .collect()
        };
        let (base, new) = fault_sides(&|_, v| if faults(v) { 1.2e6 } else { 1e6 });
        let d = diff_with(&strip(base), &strip(new), 0.02, DEFAULT_LEVEL, on, &|| {
            false
        })
        .unwrap();
        assert!(
            d.faults.cells.is_empty() && !d.faults.applied,
            "{:?}",
            d.faults
        );
    }

    #[test]
    fn ratios_are_read_against_the_host_shift_of_the_cells_that_call_no_allocator() {
        // The NEW run's machine is 5 % faster: every cell's p50 × 0.95. Three reuse cells
        // (no allocation call in their loop) show it; one allocating cell is 10 % slower
        // besides.
        let cell = |alloc: &str, variant: &str, p50: f64, allocs: f64| DiffInput {
            allocs_per_iter: Some(allocs),
            ..row(alloc, variant, p50, p50 * 0.005, 0.0)
        };
        let allocators = ["system", "jemalloc", "mimalloc"];
        let side = |f: &dyn Fn(&str, bool) -> f64| -> Vec<DiffInput> {
            allocators
                .iter()
                .flat_map(|a| {
                    [
                        cell(a, "reuse", 1000.0 * f(a, false), 0.0),
                        cell(a, "in-place", 2000.0 * f(a, true), 1.0),
                    ]
                })
                .collect()
        };
        let base = side(&|_, _| 1.0);
        let new = side(&|a, allocating| {
            0.95 * if allocating && a == "jemalloc" {
                1.1
            } else {
                1.0
            }
        });
        let verdicts = |d: &Diff| -> Vec<(String, Option<Verdict>)> {
            d.cells
                .iter()
                .map(|c| (c.cell.clone(), c.verdict))
                .collect()
        };
        let raw = diff(&base, &new, 0.02, DEFAULT_LEVEL, false, false, &|| false).unwrap();
        assert!(
            raw.cells
                .iter()
                .filter(|c| c.verdict == Some(Verdict::Faster))
                .count()
                >= 5,
            "as measured, the host's 5 % reads as faster cells: {:?}",
            verdicts(&raw)
        );
        assert_eq!(raw.host.not_applied.as_deref(), Some("--no-host-reference"));
        let d = diff(&base, &new, 0.02, DEFAULT_LEVEL, false, true, &|| false).unwrap();
        assert!(d.host.applied, "{:?}", d.host);
        assert_eq!(d.host.cells.len(), 3);
        assert!((d.host.ratio.unwrap() - 0.95).abs() < 1e-3, "{:?}", d.host);
        for c in &d.cells {
            let want = if c.cell.contains("jemalloc in-place") {
                Verdict::Slower
            } else {
                Verdict::NoSignificantDifference
            };
            assert_eq!(c.verdict, Some(want), "{:?}", verdicts(&d));
            assert!(
                c.ratio_ci_low.unwrap() <= c.ratio.unwrap()
                    && c.ratio.unwrap() <= c.ratio_ci_high.unwrap()
            );
        }
        let jem = d
            .cells
            .iter()
            .find(|c| c.cell.contains("jemalloc in-place"))
            .unwrap();
        assert!((jem.ratio.unwrap() - 1.1).abs() < 0.01, "{jem:?}");
        // Too few reference cells: said, nothing read against them.
        let d = diff(
            &base[..4],
            &new[..4],
            0.02,
            DEFAULT_LEVEL,
            false,
            true,
            &|| false,
        )
        .unwrap();
        assert!(!d.host.applied && d.host.not_applied.unwrap().contains("at least 3"));
    }

    #[test]
    fn improvement_regression_no_change_and_unmatched_cells() {
        let base = vec![
            row("system", "in-place", 1000.0, 10.0, 0.0),
            row("system", "out-of-place", 10_000.0, 100.0, 3874.0),
            row("jemalloc", "in-place", 4000.0, 40.0, 1954.0),
            row("mimalloc", "in-place", 570.0, 5.0, 0.0),
        ];
        let mut new = vec![
            row("system", "in-place", 1005.0, 10.0, 0.0), // noise
            row("system", "out-of-place", 1000.0, 10.0, 0.0), // fixed
            row("jemalloc", "in-place", 8000.0, 80.0, 3908.0), // regressed
            row("tcmalloc", "in-place", 600.0, 6.0, 0.0),
        ];
        new[0].allocator_version = Some("glibc 2.41".into());
        let d = diff(&base, &new, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
        assert_eq!(d.cells.len(), 3);
        let v = |i: usize| d.cells[i].verdict;
        assert_eq!(v(0), Some(Verdict::NoSignificantDifference));
        assert_eq!(v(1), Some(Verdict::Faster));
        assert_eq!(v(2), Some(Verdict::Slower));
        assert_eq!(d.regressions(), 1);
        assert_eq!(d.cells[1].changes.0[MINOR_FAULTS], Some(-3874.0));
        let ci = (
            d.cells[2].ratio_ci_low.unwrap(),
            d.cells[2].ratio_ci_high.unwrap(),
        );
        assert!(ci.0 < 2.0 && 2.0 < ci.1, "{ci:?}");
        // Six processes a side: the Mann–Whitney interval of 95.9 %.
        assert!(d.cells[2].ratio_ci_coverage.unwrap() > 0.95);
        assert_eq!(d.cells[2].ratio_method, Some("hodges-lehmann"));
        // Rows alone (no process values): two 96.9 % medians' intervals give at least
        // 93.75 %, below the 95 % a verdict needs: undecided, however far apart.
        let strip = |rows: &[DiffInput]| {
            rows.iter()
                .cloned()
                .map(|mut r| {
                    r.process_p50_ns.clear();
                    r
                })
                .collect::<Vec<_>>()
        };
        let rows_only = diff(
            &strip(&base),
            &strip(&new),
            0.02,
            DEFAULT_LEVEL,
            true,
            true,
            &|| false,
        )
        .unwrap();
        assert_eq!(rows_only.cells[2].verdict, Some(Verdict::Undecided));
        assert!((rows_only.cells[2].ratio_ci_coverage.unwrap() - 60.0 / 64.0).abs() < 1e-12);
        assert_eq!(rows_only.regressions(), 0);
        assert_eq!(d.only_in_base, vec!["scale mimalloc in-place size=1000"]);
        assert_eq!(d.only_in_new, vec!["scale tcmalloc in-place size=1000"]);
        assert_eq!(
            d.version_changes,
            vec!["scale system in-place size=1000: glibc 2.36 → glibc 2.41"]
        );
    }

    #[test]
    fn failed_or_single_process_cells_get_no_verdict() {
        let base = vec![row("system", "in-place", 1000.0, 10.0, 0.0)];
        let mut failed = base.clone();
        failed[0].status = "failed".into();
        failed[0].p50_ns = None;
        let d = diff(&base, &failed, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
        assert_eq!(d.cells[0].verdict, None);
        assert_eq!(d.cells[0].note.as_deref(), Some("failed in NEW"));
        let mut single = base.clone();
        single[0].p50_ci_low_ns = None;
        single[0].process_p50_ns.truncate(1);
        let d = diff(&base, &single, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
        assert_eq!((d.cells[0].ratio, d.cells[0].verdict), (Some(1.0), None));
        assert_eq!(d.regressions(), 0);
    }

    /// Matching makes each row's key once: the work grows with the cells, not their
    /// square (a search per cell made about n²/2 keys: 2k/4k/8k cells took 0.5/2.0/8.3 s,
    /// 40k never ended).
    #[test]
    fn matching_makes_each_key_once() {
        let cells = |n: usize, shift: usize| -> Vec<DiffInput> {
            (0..n)
                .map(|i| {
                    let mut r = row("system", "in-place", 1000.0, 10.0, 0.0);
                    r.size = (i + shift) as u64;
                    r.process_p50_ns.clear();
                    r
                })
                .collect()
        };
        for n in [2000, 4000] {
            // Half the cells on both sides, a quarter on one side only, each way.
            let (base, new) = (cells(n, 0), cells(n, n / 2));
            KEYS_MADE.with(|k| k.set(0));
            let d = diff(&base, &new, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
            assert_eq!(KEYS_MADE.with(|k| k.get()), 2 * n, "{n} cells a side");
            assert_eq!(d.cells.len(), n / 2);
            assert_eq!((d.only_in_base.len(), d.only_in_new.len()), (n / 2, n / 2));
            assert_eq!(d.only_in_base[0], "scale system in-place size=0");
            assert_eq!(d.only_in_new[0], format!("scale system in-place size={n}"));
            // In BASE's order.
            assert_eq!(
                d.cells[0].cell,
                format!("scale system in-place size={}", n / 2)
            );
        }
    }

    #[test]
    fn values_no_measurement_could_give_are_refused() {
        let ok = row("system", "in-place", 1000.0, 10.0, 0.0);
        assert_eq!(invalid(std::slice::from_ref(&ok)), None);
        for bad in [5e-324, 1e300, f64::INFINITY] {
            let mut r = ok.clone();
            r.p50_ns = Some(bad);
            assert!(
                invalid(&[r]).unwrap().contains("could have measured"),
                "{bad}"
            );
            let mut r = ok.clone();
            r.process_p50_ns[0] = bad;
            assert!(invalid(&[r]).is_some(), "{bad}");
        }
        let mut r = ok.clone();
        r.per_iter[MINOR_FAULTS] = Some(1e308);
        assert!(invalid(&[r]).unwrap().contains("below 1e15"));
        // Counts below zero, named by their column (an exec row's by exec's column),
        // failed rows as much as ok ones.
        let mut r = ok.clone();
        r.per_iter[MINOR_FAULTS] = Some(-5.0);
        let e = invalid(&[r]).unwrap();
        assert!(
            e.contains("row 1 (scale system in-place size=")
                && e.contains("column minflt_per_iter is -5")
                && e.contains("0 or more"),
            "{e}"
        );
        let mut r = ok.clone();
        r.status = "failed".into();
        r.rss_end_bytes = Some(-1.0);
        assert!(invalid(&[r])
            .unwrap()
            .contains("column rss_end_bytes is -1"));
        let mut run = RunFigures::default();
        run[RUN_BRK] = Some(-3.0);
        let exec = crate::analysis::command::ExecRow {
            allocator: "system".into(),
            per_run: run,
            ..Default::default()
        };
        let e = invalid(&[DiffInput::from_exec(&exec)]).unwrap();
        assert!(
            e.contains("(system (whole command, per run)): column brk is -3"),
            "{e}"
        );
    }

    /// Cells whose processes all gave the same p50 (zero-width intervals) are widened
    /// from the histograms' resolution, not left at zero width.
    #[test]
    fn zero_width_intervals_widen_too() {
        let (base, new) = two_runs(3, 1.0, (0, 1.0));
        let flat = |rows: &[DiffInput]| -> Vec<DiffInput> {
            rows.iter()
                .map(|r| {
                    let mut r = r.clone();
                    let m = crate::analysis::stats::median(&r.process_p50_ns).unwrap();
                    r.process_p50_ns = vec![m; 6];
                    r
                })
                .collect()
        };
        let d = diff(
            &flat(&base),
            &flat(&new),
            0.02,
            DEFAULT_LEVEL,
            true,
            true,
            &|| false,
        )
        .unwrap();
        let k = d.drift.widened_by.unwrap();
        assert!(k > 1.0, "{:?}", d.drift);
        for c in &d.cells {
            assert_eq!(c.within_run_ci_low, c.within_run_ci_high);
            assert!(c.ratio_ci_low.unwrap() < c.ratio_ci_high.unwrap(), "{c:?}");
        }
    }

    /// A standard normal draw (Box–Muller).
    fn normal(rng: &mut crate::analysis::stats::SplitMix) -> f64 {
        let u = |r: &mut crate::analysis::stats::SplitMix| {
            ((r.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (a, b) = (u(rng), u(rng));
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    /// Two separate runs of 24 cells, six processes each: every cell has its own process
    /// noise (0.2 % to 3 %), and the second run moves each cell by a drift of its own,
    /// twice its process noise (identical compare runs showed 2.3 times, docs/diff.md),
    /// `effect` multiplies the whole second run, `changed` = (n, f) its first n cells by f.
    fn two_runs(seed: u64, effect: f64, changed: (usize, f64)) -> (Vec<DiffInput>, Vec<DiffInput>) {
        let mut rng = crate::analysis::stats::SplitMix(seed);
        let (mut base, mut new) = (Vec::new(), Vec::new());
        for i in 0..24 {
            let sigma = 0.002 + 0.028 * (i % 6) as f64 / 5.0;
            let drift = 2.0 * sigma * normal(&mut rng);
            let factor = effect * if i < changed.0 { changed.1 } else { 1.0 };
            let mut side = |shift: f64, out: &mut Vec<DiffInput>| {
                let mut r = row(
                    &format!("a{}", i / 4),
                    &format!("v{}", i % 4),
                    1e6,
                    1.0,
                    0.0,
                );
                r.process_p50_ns = (0..6)
                    .map(|_| 1e6 * (shift + sigma * normal(&mut rng)).exp())
                    .collect();
                out.push(r);
            };
            side(0.0, &mut base);
            side(drift + factor.ln(), &mut new);
        }
        (base, new)
    }

    #[test]
    fn the_between_run_allowance_keeps_a_and_a_diffs_quiet_and_still_sees_real_changes() {
        let called = |d: &Diff| {
            d.cells
                .iter()
                .filter(|c| matches!(c.verdict, Some(Verdict::Slower | Verdict::Faster)))
                .count()
        };
        let (mut with, mut without, mut cells) = (0, 0, 0);
        for seed in 0..40 {
            let (base, new) = two_runs(seed, 1.0, (0, 1.0));
            let d = diff(&base, &new, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
            let raw = diff(&base, &new, 0.02, DEFAULT_LEVEL, false, true, &|| false).unwrap();
            with += called(&d);
            without += called(&raw);
            cells += d.cells.len();
            // The within-run intervals are kept beside the widened ones.
            let c = &d.cells[5];
            assert_eq!(c.within_run_ci_low, raw.cells[5].ratio_ci_low);
            assert!(c.ratio_ci_low <= c.within_run_ci_low);
            assert!(c.ratio_ci_high >= c.within_run_ci_high);
            assert_eq!(
                raw.drift.not_applied.as_deref(),
                Some("--no-drift-allowance")
            );
            assert!(d.drift.widened_by.unwrap() >= 1.0);
        }
        // Drift twice the process noise: the within-run intervals call many
        // unchanged cells changed; widened by the spread the cells show, at most 2 %.
        assert!(without * 100 > cells * 10, "{without} of {cells}");
        assert!(with * 100 <= cells * 2, "{with} of {cells}");
        // A change under every cell does not widen anything (the spread is taken around
        // the common shift) and is called in most cells; a change in three cells is
        // called there.
        let (mut slower, mut cells) = (0, 0);
        for seed in 0..40 {
            let (base, new) = two_runs(seed, 1.0, (0, 1.0));
            let (_, up) = two_runs(seed, 1.2, (0, 1.0));
            let same = diff(&base, &new, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
            let d = diff(&base, &up, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
            let (a, b) = (same.drift.spread.unwrap(), d.drift.spread.unwrap());
            assert!((a - b).abs() < 1e-9 * a.max(1.0), "{a} vs {b}");
            slower += d.regressions();
            cells += d.cells.len();
            let (base, three) = two_runs(seed, 1.0, (3, 1.5));
            let d = diff(&base, &three, 0.02, DEFAULT_LEVEL, true, true, &|| false).unwrap();
            assert!(
                d.cells[..3]
                    .iter()
                    .all(|c| c.verdict == Some(Verdict::Slower)),
                "seed {seed}: {:?}",
                d.cells[..3]
                    .iter()
                    .map(|c| (c.ratio, c.ratio_ci_low))
                    .collect::<Vec<_>>()
            );
        }
        assert!(slower * 100 >= cells * 80, "+20 %: {slower} of {cells}");
        // Too few cells to estimate a spread: said, nothing widened.
        let (base, new) = two_runs(1, 1.0, (0, 1.0));
        let d = diff(
            &base[..5],
            &new[..5],
            0.02,
            DEFAULT_LEVEL,
            true,
            true,
            &|| false,
        )
        .unwrap();
        assert_eq!(d.drift.widened_by, None);
        assert!(d
            .drift
            .not_applied
            .as_deref()
            .unwrap()
            .contains("at least 8"));
        assert!(d
            .cells
            .iter()
            .all(|c| c.ratio_ci_low == c.within_run_ci_low));
    }
}
