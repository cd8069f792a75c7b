//! Changes of behaviour along a size sweep: neighbouring sizes where faults or memory
//! syscalls jump or drop (the starting points for exact cliffs). One rule
//! ([`changes`]) for built-in cells and commands, per iteration, per call and per run.

use crate::model::metric::{MEMORY_SYSCALLS, MINOR_FAULTS};
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

/// What a metric does along the sizes where its behaviour does not change — the "level
/// of the low side" that an onset leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trend {
    /// It grows in proportion to the size (a worker's counts per iteration; a command's
    /// counts per call from the difference of N and 2N calls): the pages an iteration
    /// touches.
    Proportional,
    /// A level plus what the size adds (a command's counts per run, start-up included:
    /// the start-up's faults and calls do not depend on the size, the first touch of
    /// the input does).
    Level,
    /// The same at every size, with no slope to measure (a worker's memory syscalls per
    /// iteration: calls, not pages).
    Flat,
}

impl Trend {
    /// The value `trend` expects at `size` from the low side's `value` at `from`.
    pub fn expect(self, from: u64, value: f64, size: u64) -> f64 {
        match self {
            Trend::Proportional if from > 0 => value * size as f64 / from as f64,
            _ => value,
        }
    }
}

/// One measured size of a series: the metric's value and its noise (the spread of the
/// value over the rounds that measured it; 0 where one measurement is all there is).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub size: u64,
    pub value: f64,
    pub noise: f64,
}

/// The one rule for changes along a series (built-in cells and commands alike): between
/// neighbouring sizes, the value moves by at least `min_delta` and by more than the noise
/// of either point; and, for a series that grows with the size (proportional or level),
/// its rate per element above the series' level changes by a factor of 4 or more — so
/// that growth along the series' own [`Trend`] is not a change of behaviour, and a step or
/// the start of a ramp is. A flat series (calls, not pages) has no growth to tell apart:
/// any such move is a change. `points` sorted by size; returns the index of each change's
/// lower point.
pub fn changes(points: &[Point], trend: Trend, min_delta: f64) -> Vec<usize> {
    // The level a start-up adds is the first point's (a level series); a proportional
    // one has none.
    let floor = match (trend, points.first()) {
        (Trend::Level, Some(p)) => p.value,
        _ => 0.0,
    };
    let rate = |p: &Point| (p.value - floor).abs() / p.size.max(1) as f64;
    let mut out = Vec::new();
    for (i, w) in points.windows(2).enumerate() {
        let (a, b) = (&w[0], &w[1]);
        let margin = min_delta.max(a.noise).max(b.noise);
        let (r1, r2) = (rate(a), rate(b));
        let (lo, hi) = (r1.min(r2), r1.max(r2));
        let rate_changed = trend == Trend::Flat || (hi >= 4.0 * lo && hi > 0.0);
        if (b.value - a.value).abs() >= margin && rate_changed {
            out.push(i);
        }
    }
    out
}

/// Neighbouring sizes where `get` jumps up or drops: by at least `min_delta` per
/// iteration and beyond what `trend` expects ([`changes`]: faults that merely grow with
/// the size are not a change of behaviour).
pub fn jumps(
    rows: &[SummaryRow],
    get: fn(&SummaryRow) -> Option<f64>,
    min_delta: f64,
    trend: Trend,
) -> Vec<Jump> {
    let mut series: BTreeMap<LineKey, Vec<(Point, usize)>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate().filter(|(_, r)| r.status.is_ok()) {
        if let Some(v) = get(r) {
            series
                .entry((r.workload, r.threads, r.allocator_spec.clone(), r.variant))
                .or_default()
                .push((
                    Point {
                        size: r.size,
                        value: v,
                        noise: 0.0,
                    },
                    i,
                ));
        }
    }
    let mut out = Vec::new();
    for ((workload, threads, allocator, variant), mut pts) in series {
        pts.sort_by_key(|p| p.0.size);
        let points: Vec<Point> = pts.iter().map(|p| p.0).collect();
        for i in changes(&points, trend, min_delta) {
            let ((a, row), (b, _)) = (pts[i], pts[i + 1]);
            out.push(Jump {
                workload,
                threads,
                allocator: allocator.clone(),
                variant,
                from_size: a.size,
                from_value: a.value,
                to_size: b.size,
                to_value: b.value,
                from_row: row,
            });
        }
    }
    out
}

/// Jumps in minor faults per iteration (by at least 10), which grow with the size.
pub fn fault_jumps(rows: &[SummaryRow]) -> Vec<Jump> {
    jumps(
        rows,
        |r| r.per_iter[MINOR_FAULTS],
        10.0,
        Trend::Proportional,
    )
}

/// Jumps in memory syscalls per iteration (by at least 0.5): calls, as many at any size
/// where behaviour does not change (the trend bisection gives them too).
pub fn syscall_jumps(rows: &[SummaryRow]) -> Vec<Jump> {
    jumps(rows, |r| r.per_iter[MEMORY_SYSCALLS], 0.5, Trend::Flat)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::record::{Outcome, RunFailure};
    use crate::model::run::RunSpec;
    use crate::model::spec::Allocator;

    pub fn row(size: u64, faults: f64) -> SummaryRow {
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
        r.per_iter[MINOR_FAULTS] = Some(faults);
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

    fn pts(v: &[(u64, f64)], noise: f64) -> Vec<Point> {
        v.iter()
            .map(|&(size, value)| Point { size, value, noise })
            .collect()
    }

    #[test]
    fn a_level_series_changes_where_it_leaves_its_start_up_level_not_along_the_ramp_after() {
        // Per run of a program: 12,000 faults of start-up (±15 from run to run), then a
        // storm whose faults grow with the size (NumPy's func2 under glibc, without
        // {calls}).
        let s = pts(
            &[
                (10_000, 12_000.0),
                (14_142, 12_010.0),
                (20_000, 12_020.0),
                (28_284, 26_000.0),
                (40_000, 32_000.0),
                (56_569, 40_000.0),
            ],
            15.0,
        );
        assert_eq!(changes(&s, Trend::Level, 1.0), vec![2]);
        // The same numbers read as proportional counts see no change of rate at all.
        assert!(changes(&s, Trend::Proportional, 1.0).is_empty());
        // Noise larger than a move hides it.
        let mut noisy = s.clone();
        noisy[3].noise = 20_000.0;
        assert!(changes(&noisy, Trend::Level, 1.0).is_empty());
    }

    #[test]
    fn a_flat_series_changes_where_it_moves_by_the_threshold_whatever_its_rate() {
        // glibc's memory syscalls per call of examples/temporaries with two 8-byte
        // buffers: 2 below its mmap threshold, 3 above. The rate per element barely
        // moves (2/12,000 against 3/20,000), so only a flat reading sees the change.
        let s = pts(&[(12_000, 2.0), (20_000, 3.0), (28_000, 3.2)], 0.0);
        assert_eq!(changes(&s, Trend::Flat, 0.5), vec![0]);
        assert!(changes(&s, Trend::Proportional, 0.5).is_empty());
        // A move under the threshold, or within the noise, is none.
        assert!(changes(&s, Trend::Flat, 1.5).is_empty());
        assert!(changes(&pts(&[(12_000, 2.0), (20_000, 3.0)], 1.5), Trend::Flat, 0.5).is_empty());
    }
}
