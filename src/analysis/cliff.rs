//! `alloclab cliff`: the exact size where an allocator's behaviour changes. Given a range
//! whose two ends differ — minor faults per iteration at least 1 at one end and not at
//! the other, or memory syscalls per iteration at least 0.5 — bisection over the size
//! finds the two neighbouring sizes where it flips, and reports both sides. Measuring a
//! size is the caller's (the driver's [`crate::engine::probe`]); the search is pure.

use crate::analysis::jumps::Jump;
use crate::fmt::{fmt_count, group_thousands};
use crate::model::record::RunRecord;
use crate::model::run::RunSpec;

/// What flips.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Metric {
    /// Minor page faults per iteration ≥ 1.
    Faults,
    /// brk + mmap + munmap + madvise + mremap per iteration ≥ 0.5.
    Syscalls,
}

impl Metric {
    pub fn value(self, r: &RunRecord) -> Option<f64> {
        match self {
            Metric::Faults => Some(r.minflt_per_iter),
            Metric::Syscalls => Some(
                r.brk_per_iter?
                    + r.mmap_per_iter?
                    + r.munmap_per_iter?
                    + r.madvise_per_iter?
                    + r.mremap_per_iter?,
            ),
        }
    }

    pub fn threshold(self) -> f64 {
        match self {
            Metric::Faults => 1.0,
            Metric::Syscalls => 0.5,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Faults => "minor faults",
            Metric::Syscalls => "memory syscalls",
        }
    }
}

/// One measured size.
#[derive(Clone, Debug)]
pub struct Probe<R = RunRecord> {
    pub size: u64,
    pub value: f64,
    /// What was measured there: a worker's record, or a command's per-call figures.
    pub record: R,
}

/// A cliff as kept in a results folder.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FoundCliff {
    /// The allocator label (spec and THP mode).
    pub allocator: String,
    pub workload: crate::model::spec::Workload,
    pub variant: crate::model::spec::Variant,
    pub threads: u32,
    /// "minor faults" or "memory syscalls".
    pub metric: String,
    pub below_size: u64,
    pub below_value: f64,
    pub above_size: u64,
    pub above_value: f64,
    pub probes: usize,
    /// Why a change seen in the sweep could not be bisected (then `below_*`/`above_*`
    /// are the sweep's two sizes and values, not neighbouring sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unresolved: Option<String>,
}

/// The resolution run-all bisects to: neighbouring sizes up to 8,192 elements, then a
/// 1/8,192 of the size (64 KiB of f64 at a million elements).
pub fn auto_resolution(size: u64) -> u64 {
    (size / 8192).max(1)
}

impl FoundCliff {
    pub fn new(spec: &RunSpec, metric: Metric, c: &Cliff) -> Self {
        FoundCliff {
            allocator: spec.allocator_label(),
            workload: spec.workload,
            variant: spec.variant,
            threads: spec.threads,
            metric: metric.name().into(),
            below_size: c.below.size,
            below_value: c.below.value,
            above_size: c.above.size,
            above_value: c.above.value,
            probes: c.probes,
            unresolved: None,
        }
    }

    /// A change seen between two sweep sizes that bisection could not pin down, and why.
    pub fn unresolved(spec: &RunSpec, metric: Metric, j: &Jump, why: String) -> Self {
        FoundCliff {
            allocator: spec.allocator_label(),
            workload: spec.workload,
            variant: spec.variant,
            threads: spec.threads,
            metric: metric.name().into(),
            below_size: j.from_size,
            below_value: j.from_value,
            above_size: j.to_size,
            above_value: j.to_value,
            probes: 0,
            unresolved: Some(why),
        }
    }

    pub fn describe(&self) -> String {
        use crate::fmt::fmt_count;
        if let Some(why) = &self.unresolved {
            return format!(
                "{} {} ({}, {} thread(s)): {} per iteration {} at {} elements and {} at {} in the sweep — not bisected: {why}",
                self.allocator,
                self.variant,
                self.workload,
                self.threads,
                self.metric,
                fmt_count(self.below_value),
                crate::fmt::group_thousands(self.below_size as i64),
                fmt_count(self.above_value),
                crate::fmt::group_thousands(self.above_size as i64),
            );
        }
        let gap = if self.above_size == self.below_size + 1 {
            String::new()
        } else {
            format!(
                " (bisected to {} elements)",
                crate::fmt::group_thousands((self.above_size - self.below_size) as i64)
            )
        };
        format!(
            "{} {} ({}, {} thread(s)): {} per iteration {} at {} elements ({} B per f64 buffer), {} at {} elements{gap}",
            self.allocator,
            self.variant,
            self.workload,
            self.threads,
            self.metric,
            fmt_count(self.below_value),
            fmt_count(self.below_size as f64),
            fmt_count((self.below_size * 8) as f64),
            fmt_count(self.above_value),
            fmt_count(self.above_size as f64),
        )
    }
}

/// The two neighbouring sizes where the metric crosses its threshold.
pub struct Cliff<R = RunRecord> {
    pub below: Probe<R>,
    pub above: Probe<R>,
    pub probes: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum CliffError {
    #[error("{0}")]
    Run(String),
    #[error("{metric} per iteration is {} at {} and {} at {}: both {side} {threshold}, so there is no cliff to find in this range; widen it", fmt_count(*.from_value), group_thousands(*.from as i64), fmt_count(*.to_value), group_thousands(*.to as i64))]
    NoChange {
        metric: &'static str,
        from: u64,
        from_value: f64,
        to: u64,
        to_value: f64,
        side: &'static str,
        threshold: f64,
    },
    #[error("{0} is unavailable in these runs: {1}")]
    Unavailable(&'static str, String),
}

/// When a probe counts as past the cliff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// At or above the metric's threshold (1 fault, 0.5 memory syscalls).
    Threshold,
    /// At least halfway between the values at both ends (and at least the threshold):
    /// for whole programs, whose per-call figures carry a few faults of noise either way,
    /// the cliff is where the value jumps, not where noise first reaches 1.
    Midway,
}

/// Bisects `[from, to]` for the size where `metric` crosses over (by `rule`), until the
/// two sides are at most `resolution` elements apart (1: neighbouring sizes).
pub fn find<R>(
    measure: &mut dyn FnMut(u64) -> Result<Probe<R>, CliffError>,
    from: u64,
    to: u64,
    metric: Metric,
    rule: Rule,
    resolution: u64,
    progress: &mut dyn FnMut(&Probe<R>),
) -> Result<Cliff<R>, CliffError> {
    let mut lo = measure(from)?;
    progress(&lo);
    let mut hi = measure(to)?;
    progress(&hi);
    let mut probes = 2;
    let ends = |p: &Probe<R>| p.value >= metric.threshold();
    let threshold = if rule == Rule::Midway {
        metric.threshold().max((lo.value + hi.value) / 2.0)
    } else {
        metric.threshold()
    };
    let above = |p: &Probe<R>| p.value >= threshold;
    if ends(&lo) == ends(&hi) {
        return Err(CliffError::NoChange {
            metric: metric.name(),
            from,
            from_value: lo.value,
            to,
            to_value: hi.value,
            side: if ends(&lo) { "at or above" } else { "below" },
            threshold: metric.threshold(),
        });
    }
    while hi.size - lo.size > resolution.max(1) {
        let mid = lo.size + (hi.size - lo.size) / 2;
        let m = measure(mid)?;
        progress(&m);
        probes += 1;
        if above(&m) == above(&lo) {
            lo = m;
        } else {
            hi = m;
        }
    }
    let (below, above_side) = if above(&lo) { (hi, lo) } else { (lo, hi) };
    Ok(Cliff {
        below,
        above: above_side,
        probes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_that_could_not_be_bisected_says_where_and_why() {
        let spec = RunSpec {
            allocator: crate::model::spec::Allocator::System,
            workload: crate::model::spec::Workload::Scale,
            variant: crate::model::spec::Variant::InPlace,
            size: 2_000_000,
            threads: 1,
            seed: 1,
            knobs: Vec::new(),
            thp: Default::default(),
            library: None,
        };
        let j = Jump {
            workload: spec.workload,
            threads: 1,
            allocator: "system".into(),
            variant: spec.variant,
            from_size: 2_000_000,
            from_value: 0.0,
            to_size: 2_965_821,
            to_value: 445.615_384_615_384_64,
            from_row: 0,
        };
        let c = FoundCliff::unresolved(&spec, Metric::Faults, &j, "the probes saw none".into());
        let text = c.describe();
        assert!(
            text.contains("0 at 2,000,000 elements and 446 at 2,965,821 in the sweep — not bisected: the probes saw none"),
            "{text}"
        );
        let json = serde_json::to_string(&c).unwrap();
        assert!(
            json.contains("\"unresolved\":\"the probes saw none\""),
            "{json}"
        );
        let back: FoundCliff = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
    }

    /// A pretend allocator whose faults start at 12,345 elements.
    fn step(record: &RunRecord, size: u64) -> Result<Probe, CliffError> {
        let mut r = record.clone();
        r.size = size;
        r.minflt_per_iter = if size >= 12_345 {
            size as f64 / 512.0
        } else {
            0.0
        };
        Ok(Probe {
            size,
            value: Metric::Faults.value(&r).unwrap_or(0.0),
            record: r,
        })
    }

    fn template() -> RunRecord {
        let json = include_str!("../../tests/data/record.json");
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn bisection_finds_the_exact_neighbours() {
        let template = template();
        let mut exec = |size| step(&template, size);
        let mut seen = 0;
        let c = find(
            &mut exec,
            1000,
            1_000_000,
            Metric::Faults,
            Rule::Threshold,
            1,
            &mut |_| seen += 1,
        )
        .unwrap();
        assert_eq!((c.below.size, c.above.size), (12_344, 12_345));
        assert_eq!(c.below.value, 0.0);
        assert_eq!(c.probes, seen);
        assert!(c.probes <= 2 + 20, "bisection, not a scan: {}", c.probes);
        let coarse = find(
            &mut exec,
            1000,
            1_000_000,
            Metric::Faults,
            Rule::Threshold,
            100,
            &mut |_| {},
        )
        .unwrap();
        assert!(coarse.below.size < 12_345 && coarse.above.size >= 12_345);
        assert!(coarse.above.size - coarse.below.size <= 100 && coarse.probes < c.probes);
        let e = find(
            &mut exec,
            20_000,
            30_000,
            Metric::Faults,
            Rule::Threshold,
            1,
            &mut |_| {},
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("no cliff"), "{e}");
    }

    #[test]
    fn midway_bisection_is_not_fooled_by_noise_around_the_threshold() {
        // Noise of ±1.5 below the cliff at 1,000, 8,192 above it.
        let mut measure = |size: u64| -> Result<Probe<()>, CliffError> {
            let noise = if size.is_multiple_of(3) { 1.5 } else { -1.0 };
            let value = if size >= 1000 { 8192.0 } else { noise };
            Ok(Probe {
                size,
                value,
                record: (),
            })
        };
        let c = find(
            &mut measure,
            10,
            5000,
            Metric::Faults,
            Rule::Midway,
            1,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!((c.below.size, c.above.size), (999, 1000));
        let plain = find(
            &mut measure,
            10,
            5000,
            Metric::Faults,
            Rule::Threshold,
            1,
            &mut |_| {},
        )
        .unwrap();
        assert!(
            plain.above.size < 1000,
            "the absolute threshold follows the noise"
        );
    }
}
