//! What the lab measures, listed once: each count's key (its summary.csv column), its
//! label, what it is counted per, and the one change from which it is worth naming. The
//! console, the reports, the pages and the findings read their thresholds here, so that
//! no two surfaces name a change the other leaves out.

use crate::model::summary::SummaryRow;

/// The noise band of a time verdict where nothing else is given (`--noise-threshold`'s
/// default, and the reports' own): a difference is a verdict only when its whole interval
/// lies beyond ±2 %.
pub const NOISE_THRESHOLD: f64 = 0.02;

/// What a figure is counted per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    /// One iteration of a workload's measured loop.
    Iteration,
    /// One run of a user's command.
    Run,
}

/// One count the lab measures.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// The summary.csv column of its per-iteration figure.
    pub key: &'static str,
    /// What the console and the reports call it ("minor faults", "brk").
    pub label: &'static str,
    /// What it is counted per.
    pub per: Per,
    /// The smallest change per iteration worth naming as a cause: below it, two cells
    /// count the same.
    pub named_from: f64,
    /// Whether it is a memory syscall (brk, mmap, munmap, madvise, mremap).
    pub syscall: bool,
    /// A summary row's figure of it.
    pub of: fn(&SummaryRow) -> Option<f64>,
}

/// Minor page faults: a page touched for the first time since it was (re)mapped.
pub const MINOR_FAULTS: Metric = Metric {
    key: "minflt_per_iter",
    of: |r| r.minflt_per_iter,
    label: "minor faults",
    per: Per::Iteration,
    named_from: 1.0,
    syscall: false,
};

/// Major page faults: a page read from disk, rare and dear: named from one every ten
/// iterations.
pub const MAJOR_FAULTS: Metric = Metric {
    key: "majflt_per_iter",
    of: |r| r.majflt_per_iter,
    label: "major faults",
    per: Per::Iteration,
    named_from: 0.1,
    syscall: false,
};

/// A memory syscall counted per iteration, named from half a call per iteration (one
/// every other iteration).
const fn syscall(
    key: &'static str,
    label: &'static str,
    of: fn(&SummaryRow) -> Option<f64>,
) -> Metric {
    Metric {
        key,
        of,
        label,
        per: Per::Iteration,
        named_from: 0.5,
        syscall: true,
    }
}

/// brk: the heap top moved (glibc's main arena grows and trims with it).
pub const BRK: Metric = syscall("brk_per_iter", "brk", |r| r.brk_per_iter);
/// mmap: memory mapped (a large block, or an allocator's new region).
pub const MMAP: Metric = syscall("mmap_per_iter", "mmap", |r| r.mmap_per_iter);
/// munmap: memory unmapped.
pub const MUNMAP: Metric = syscall("munmap_per_iter", "munmap", |r| r.munmap_per_iter);
/// madvise: pages given back to the kernel while staying mapped (a purge).
pub const MADVISE: Metric = syscall("madvise_per_iter", "madvise", |r| r.madvise_per_iter);
/// mremap: a mapping moved or resized.
pub const MREMAP: Metric = syscall("mremap_per_iter", "mremap", |r| r.mremap_per_iter);

/// The counts a cause is read from, in the order they are named.
pub const COUNTS: [Metric; 7] = [
    MINOR_FAULTS,
    MAJOR_FAULTS,
    BRK,
    MMAP,
    MUNMAP,
    MADVISE,
    MREMAP,
];

impl Metric {
    /// Whether a change of `d` (per iteration) is worth naming.
    pub fn named(&self, d: f64) -> bool {
        d.abs() >= self.named_from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_count_has_its_own_column_and_label_and_a_positive_threshold() {
        let mut keys: Vec<&str> = COUNTS.iter().map(|m| m.key).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), COUNTS.len(), "a column named twice");
        for m in COUNTS {
            assert!(
                m.named_from > 0.0,
                "{}: a threshold of 0 names noise",
                m.key
            );
            assert!(m.key.ends_with("_per_iter"), "{}", m.key);
            assert!(!m.named(m.named_from * 0.99) && m.named(-m.named_from));
        }
    }
}
