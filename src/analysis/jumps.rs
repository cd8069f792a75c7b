//! Changes of behaviour along a size sweep: neighbouring sizes where faults or memory
//! syscalls per iteration jump or drop (the starting points for exact cliffs).

use crate::model::spec::{Variant, Workload};
use crate::model::summary::SummaryRow;
use std::collections::BTreeMap;

/// A change in a per-iteration counter between two neighbouring sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Jump {
    pub workload: Workload,
    pub threads: u32,
    /// The allocator with its knobs.
    pub allocator: String,
    pub variant: Variant,
    pub from_size: u64,
    pub from_value: f64,
    pub to_size: u64,
    pub to_value: f64,
    /// Index of the `from_size` row in the rows given to [`jumps`].
    pub from_row: usize,
}

/// One line of a size sweep: workload, threads, allocator, variant.
type LineKey = (Workload, u32, String, Variant);

/// Neighbouring sizes where `get` jumps up or drops: by at least `min_delta` per
/// iteration, and by a factor of 4 or more per element (faults that merely grow with
/// the size are not a change of behaviour).
pub fn jumps(
    rows: &[SummaryRow],
    get: fn(&SummaryRow) -> Option<f64>,
    min_delta: f64,
) -> Vec<Jump> {
    let mut series: BTreeMap<LineKey, Vec<(u64, f64, usize)>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate().filter(|(_, r)| r.status.is_ok()) {
        if let Some(v) = get(r) {
            series
                .entry((r.workload, r.threads, r.allocator_spec.clone(), r.variant))
                .or_default()
                .push((r.size, v, i));
        }
    }
    let mut out = Vec::new();
    for ((workload, threads, allocator, variant), mut pts) in series {
        pts.sort_by_key(|p| p.0);
        for w in pts.windows(2) {
            let ((s1, v1, i1), (s2, v2, _)) = (w[0], w[1]);
            let (r1, r2) = (v1 / s1 as f64, v2 / s2 as f64);
            let (lo, hi) = (r1.min(r2), r1.max(r2));
            if (v2 - v1).abs() >= min_delta && hi >= 4.0 * lo {
                out.push(Jump {
                    workload,
                    threads,
                    allocator: allocator.clone(),
                    variant,
                    from_size: s1,
                    from_value: v1,
                    to_size: s2,
                    to_value: v2,
                    from_row: i1,
                });
            }
        }
    }
    out
}

/// Jumps in minor faults per iteration (by at least 10).
pub fn fault_jumps(rows: &[SummaryRow]) -> Vec<Jump> {
    jumps(rows, |r| r.minflt_per_iter, 10.0)
}

/// Jumps in memory syscalls per iteration (by at least 0.5).
pub fn syscall_jumps(rows: &[SummaryRow]) -> Vec<Jump> {
    jumps(rows, |r| r.memory_syscalls_per_iter, 0.5)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::record::{Outcome, RunFailure};
    use crate::model::run::RunSpec;
    use crate::model::spec::Allocator;

    pub fn row(size: u64, minflt: f64) -> SummaryRow {
        let mut r = SummaryRow::from_outcome(&Outcome {
            spec: RunSpec {
                allocator: Allocator::System,
                workload: Workload::Scale,
                variant: Variant::OutOfPlace,
                size,
                threads: 1,
                seed: 1,
                knobs: Vec::new(),
                thp: Default::default(),
                library: None,
            },
            result: Err(RunFailure {
                cause: String::new(),
            }),
        });
        r.status = crate::model::summary::RunStatus::Ok;
        r.minflt_per_iter = Some(minflt);
        r
    }

    #[test]
    fn jumps_find_steps_but_not_proportional_growth() {
        let rows = vec![
            row(1000, 0.0),
            row(2000, 0.0),
            row(4000, 0.02),
            row(8000, 35.0),
            row(16000, 70.0),
            row(32000, 140.0),
        ];
        let j = fault_jumps(&rows);
        assert_eq!(j.len(), 1, "{j:?}");
        assert_eq!((j[0].from_size, j[0].to_size), (4000, 8000));
        assert_eq!(j[0].from_row, 2);
    }
}
