//! Cells measured in several processes: one summary row per cell (medians over the
//! processes, intervals, count ranges) and the paired comparisons between cells.

use crate::analysis::stats::{compare_paired, median, median_ci, Comparison, LEVEL};
use crate::model::record::{Cell, Outcome, RunFailure, RunRecord};
use crate::model::summary::SummaryRow;
use std::collections::BTreeMap;

/// The row of a cell measured in several processes: medians over the processes, with
/// the interval of the p50 and p99 medians and the min–max of the counts. A cell with a
/// failed process is a failed row that says how many failed and why.
pub fn row(cell: &Cell) -> SummaryRow {
    let records: Vec<&RunRecord> = cell.records().map(|(_, r)| r).collect();
    let failures: Vec<&RunFailure> = cell
        .runs
        .iter()
        .filter_map(|(_, r)| r.as_ref().err())
        .collect();
    if let Some(first) = failures.first() {
        let cause = match cell.runs.len() {
            1 => first.cause.clone(),
            n => format!(
                "{} of {n} processes failed: {}",
                failures.len(),
                first.cause
            ),
        };
        return SummaryRow::from_outcome(&Outcome {
            spec: cell.spec.clone(),
            result: Err(RunFailure { cause }),
        });
    }
    let Some(first) = records.first() else {
        return SummaryRow::from_outcome(&Outcome {
            spec: cell.spec.clone(),
            result: Err(RunFailure {
                cause: "not run".into(),
            }),
        });
    };
    let mut row = SummaryRow::from_outcome(&Outcome {
        spec: cell.spec.clone(),
        result: Ok((*first).clone()),
    });
    if records.len() == 1 {
        return row;
    }
    let values = |get: &dyn Fn(&RunRecord) -> Option<f64>| -> Vec<f64> {
        records.iter().filter_map(|r| get(r)).collect()
    };
    let med = |get: &dyn Fn(&RunRecord) -> Option<f64>| -> Option<f64> { median(&values(get)) };
    let range = |get: &dyn Fn(&RunRecord) -> Option<f64>| {
        let v = values(get);
        let min = v.iter().copied().reduce(f64::min);
        let max = v.iter().copied().reduce(f64::max);
        (min, max)
    };
    let round = |v: Option<f64>| v.map(|v| v.round() as u64);
    let p50s = values(&|r| Some(r.p50_ns as f64));
    let p99s = values(&|r| Some(r.p99_ns as f64));
    row.processes = Some(records.len() as u32);
    row.iterations = Some(records.iter().map(|r| r.iterations).sum());
    row.min_ns = records.iter().map(|r| r.min_ns).min();
    row.max_ns = records.iter().map(|r| r.max_ns).max();
    row.p50_ns = round(median(&p50s));
    row.p90_ns = round(med(&|r| Some(r.p90_ns as f64)));
    row.p99_ns = round(median(&p99s));
    row.p999_ns = round(med(&|r| Some(r.p999_ns as f64)));
    row.mean_ns = med(&|r| Some(r.mean_ns));
    row.throughput_gb_per_s = row.p50_ns.map(|p50| {
        cell.spec.workload.useful_bytes(cell.spec.size) as f64 * f64::from(cell.spec.threads)
            / p50.max(1) as f64
    });
    if let Some(ci) = median_ci(&p50s, LEVEL) {
        row.p50_ci_low_ns = round(Some(ci.low));
        row.p50_ci_high_ns = round(Some(ci.high));
        row.ci_coverage = Some(ci.coverage);
    }
    if let Some(ci) = median_ci(&p99s, LEVEL) {
        row.p99_ci_low_ns = round(Some(ci.low));
        row.p99_ci_high_ns = round(Some(ci.high));
    }
    row.minflt_per_iter = med(&|r| Some(r.minflt_per_iter));
    (row.minflt_per_iter_min, row.minflt_per_iter_max) = range(&|r| Some(r.minflt_per_iter));
    row.majflt_per_iter = med(&|r| Some(r.majflt_per_iter));
    row.nvcsw_per_iter = med(&|r| Some(r.nvcsw_per_iter));
    row.nivcsw_per_iter = med(&|r| Some(r.nivcsw_per_iter));
    row.utime_ns_per_iter = med(&|r| Some(r.utime_ns_per_iter));
    row.stime_ns_per_iter = med(&|r| Some(r.stime_ns_per_iter));
    row.brk_per_iter = med(&|r| r.brk_per_iter);
    row.mmap_per_iter = med(&|r| r.mmap_per_iter);
    row.munmap_per_iter = med(&|r| r.munmap_per_iter);
    row.madvise_per_iter = med(&|r| r.madvise_per_iter);
    row.mremap_per_iter = med(&|r| r.mremap_per_iter);
    row.syscalls_per_iter = med(&|r| r.syscalls_per_iter);
    row.memory_syscalls_per_iter = med(&|r| r.memory_syscalls_per_iter());
    (
        row.memory_syscalls_per_iter_min,
        row.memory_syscalls_per_iter_max,
    ) = range(&|r| r.memory_syscalls_per_iter());
    row.allocs_per_iter = med(&|r| r.allocs_per_iter);
    row.alloc_bytes_per_iter = med(&|r| r.alloc_bytes_per_iter);
    row.rss_start_bytes = round(med(&|r| r.rss_start_bytes.map(|v| v as f64)));
    row.rss_end_bytes = round(med(&|r| r.rss_end_bytes.map(|v| v as f64)));
    row.rss_peak_bytes = round(med(&|r| Some(r.rss_peak_bytes as f64)));
    row
}

/// `other` against `base` from the rounds in which both produced a record: the ratio of
/// their p50s per round, its median, interval and verdict against `threshold`.
pub fn compare(base: &Cell, other: &Cell, threshold: f64) -> Option<Comparison> {
    let base_by_round: BTreeMap<u32, f64> = base
        .records()
        .map(|(round, r)| (round, r.p50_ns as f64))
        .collect();
    let pairs: Vec<(f64, f64)> = other
        .records()
        .filter_map(|(round, r)| Some((*base_by_round.get(&round)?, r.p50_ns as f64)))
        .collect();
    compare_paired(&pairs, threshold)
}

/// Cells whose processes disagree on a count that the workload fixes (memory syscalls
/// per iteration differ by more than one call between processes): one note each.
pub fn disagreements(rows: &[SummaryRow]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let (lo, hi) = (r.memory_syscalls_per_iter_min?, r.memory_syscalls_per_iter_max?);
            (hi - lo > 1.0).then(|| {
                format!(
                    "{} {}: its processes disagree on memory syscalls per iteration ({lo:.2} to {hi:.2}); the placement or timing of a process changes what the allocator does",
                    r.allocator_spec, r.variant
                )
            })
        })
        .collect()
}
