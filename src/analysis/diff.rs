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

use crate::analysis::stats::{level, shift_ratio, verdict, Interval, Verdict};
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
    pub minflt_per_iter: Option<f64>,
    pub memory_syscalls_per_iter: Option<f64>,
    pub rss_end_bytes: Option<f64>,
    pub allocator_version: Option<String>,
    /// Each process's p50 (ns): a JSON array in compare's JSON, the same array as text
    /// in a summary CSV, the runs' wall times for exec results; empty where the input
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
}

/// A list of numbers given as a list (JSON) or as the text of one (a CSV cell), or
/// nothing.
fn numbers<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Numbers {
        List(Vec<f64>),
        Text(String),
    }
    match Option::<Numbers>::deserialize(d)? {
        None => Ok(Vec::new()),
        Some(Numbers::List(v)) => Ok(v),
        Some(Numbers::Text(t)) if t.trim().is_empty() => Ok(Vec::new()),
        Some(Numbers::Text(t)) => serde_json::from_str(&t).map_err(|e| {
            serde::de::Error::custom(format!(
                "process_p50_ns {t:?} is not a list of numbers: {e}"
            ))
        }),
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
        if r.status != "ok" && r.status != "failed" {
            return Some(format!(
                "row {} ({key}): status {:?}, expected \"ok\" or \"failed\"",
                i + 1,
                r.status
            ));
        }
        let positive = |v: Option<f64>| v.is_none_or(|v| v.is_finite() && v > 0.0);
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
                        "row {} ({key}): p50_ns {p} is not a positive number of nanoseconds",
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
                    "row {} ({key}): an interval end or a process's p50 is not a positive number of nanoseconds",
                    i + 1
                ));
            }
        }
    }
    None
}

/// The `workload` of rows made from `alloclab exec` results: a whole command per run.
pub const EXEC_WORKLOAD: &str = "exec";

impl DiffInput {
    /// A row of `alloclab exec` (one allocator's runs of the whole command) in a diff's
    /// terms: the median wall time per run as its p50, with its interval; faults, memory
    /// syscalls and peak RSS per run.
    pub fn from_exec(r: &crate::analysis::command::ExecRow) -> Self {
        let ms = |v: Option<f64>| v.map(|m| m * 1e6);
        let memory = [r.brk, r.mmap, r.munmap, r.madvise, r.mremap]
            .iter()
            .try_fold(0.0, |sum, v| v.map(|v| sum + v));
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
            minflt_per_iter: r.minflt,
            memory_syscalls_per_iter: memory,
            rss_end_bytes: r.peak_rss_mib.map(|m| m * 1024.0 * 1024.0),
            allocator_version: r.allocator_version.clone(),
            process_p50_ns: r.run_wall_ms.iter().map(|m| m * 1e6).collect(),
            command: (!r.command.is_empty()).then(|| r.command.clone()),
            complete: r.complete,
            stopped_by: r.stopped_by.clone(),
            processes: Some(r.run_wall_ms.len() as u32),
            processes_planned: r.runs_planned,
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
    pub minflt_per_iter_change: Option<f64>,
    pub memory_syscalls_per_iter_change: Option<f64>,
    pub rss_end_bytes_change: Option<f64>,
    /// Why the cell could not be compared (a failed side).
    pub note: Option<String>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub cells: Vec<CellChange>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    /// Allocator versions that differ between the sides, per cell.
    pub version_changes: Vec<String>,
    /// The commands, where the two sides measured different ones (exec results): the
    /// first thing to know about every ratio below.
    pub command_change: Option<String>,
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
/// number of cells, not its square. Polls the interrupt flag between cells (a cell with
/// many processes a side costs their product); None when it was set.
pub fn diff(base: &[DiffInput], new: &[DiffInput], threshold: f64) -> Option<Diff> {
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
    let mut version_changes = Vec::new();
    for (b, key) in base.iter().zip(&base_keys) {
        if crate::ui::interrupt::interrupted() {
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
        cells.push(cell_change(key, b, n, threshold));
    }
    let command = |rows: &[DiffInput]| rows.iter().find_map(|r| r.command.clone());
    let command_change = match (command(base), command(new)) {
        (Some(b), Some(n)) if b != n => Some(format!("{b} → {n}")),
        _ => None,
    };
    Some(Diff {
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

/// One matched cell: the ratio with its interval and verdict, and the count changes.
fn cell_change(key: &str, b: &DiffInput, n: &DiffInput, threshold: f64) -> CellChange {
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
        ratio_method: None,
        minflt_per_iter_change: change(|r| r.minflt_per_iter),
        memory_syscalls_per_iter_change: change(|r| r.memory_syscalls_per_iter),
        rss_end_bytes_change: change(|r| r.rss_end_bytes),
        note: (!failed.is_empty()).then(|| format!("failed in {}", failed.join(" and "))),
    };
    if failed.is_empty() && b.process_p50_ns.len() >= 2 && n.process_p50_ns.len() >= 2 {
        if let Some((ratio, ci)) = shift_ratio(&b.process_p50_ns, &n.process_p50_ns, level()) {
            c.ratio = Some(ratio);
            c.ratio_ci_low = Some(ci.low);
            c.ratio_ci_high = Some(ci.high);
            c.ratio_ci_coverage = Some(ci.coverage);
            c.ratio_method = Some("hodges-lehmann");
            c.verdict = Some(verdict(ci, threshold));
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
                c.verdict = Some(verdict(ci, threshold));
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

    thread_local! {
        /// Keys made by [`DiffInput::key`] on this thread: what a match costs.
        pub(super) static KEYS_MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn row(alloc: &str, variant: &str, p50: f64, half: f64, minflt: f64) -> DiffInput {
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
            minflt_per_iter: Some(minflt),
            memory_syscalls_per_iter: Some(0.0),
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
        let d = diff(&base, &new, 0.02).unwrap();
        assert_eq!(d.cells.len(), 3);
        let v = |i: usize| d.cells[i].verdict;
        assert_eq!(v(0), Some(Verdict::NoSignificantDifference));
        assert_eq!(v(1), Some(Verdict::Faster));
        assert_eq!(v(2), Some(Verdict::Slower));
        assert_eq!(d.regressions(), 1);
        assert_eq!(d.cells[1].minflt_per_iter_change, Some(-3874.0));
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
        let rows_only = diff(&strip(&base), &strip(&new), 0.02).unwrap();
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
        let d = diff(&base, &failed, 0.02).unwrap();
        assert_eq!(d.cells[0].verdict, None);
        assert_eq!(d.cells[0].note.as_deref(), Some("failed in NEW"));
        let mut single = base.clone();
        single[0].p50_ci_low_ns = None;
        single[0].process_p50_ns.truncate(1);
        let d = diff(&base, &single, 0.02).unwrap();
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
            let d = diff(&base, &new, 0.02).unwrap();
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
}
