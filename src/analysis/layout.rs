//! What the allocator decides about layout, from the buffers' addresses every worker
//! noted ([`crate::model::layout::BufferAlignment`]): where each cell's output buffer
//! falls against 64-byte boundaries over its processes, and whether the processes whose
//! buffer is 16 bytes past a 32-byte boundary ran slower than those on one (32-byte
//! vector stores that straddle cache lines). The lab randomises where the heap starts
//! in every process, so that both kinds of process occur wherever the allocator lets
//! them; an allocator that hands out aligned blocks (mimalloc, jemalloc) has one kind.

use crate::analysis::findings::{AlignmentFigures, Figures, Item};
use crate::analysis::stats::{shift_ratio, verdict, Comparison, Verdict};
use crate::model::layout::Role;
use crate::model::record::Cell;

/// The fewest processes on each side of a 32-byte boundary before the two are compared.
pub const LEAST_PER_SIDE: usize = 3;

/// "on a 64-byte boundary in all 6 processes" / "0 bytes past a 64-byte boundary in 2
/// of 6 processes, 16 in 2, 32 in 1, 48 in 1".
pub fn placement(by: &[usize; 4]) -> String {
    let n: usize = by.iter().sum();
    let only = by.iter().position(|&k| k == n);
    let every = match n {
        1 => "in its one process".to_string(),
        2 => "in both processes".to_string(),
        n => format!("in all {n} processes"),
    };
    match only {
        Some(0) => format!("on a 64-byte boundary {every}"),
        Some(i) => format!("{} bytes past a 64-byte boundary {every}", i * 16),
        None => {
            let parts: Vec<String> = by
                .iter()
                .enumerate()
                .filter(|(_, k)| **k > 0)
                .map(|(i, k)| (i * 16, k))
                .enumerate()
                .map(|(j, (off, k))| {
                    if j == 0 {
                        format!("{off} bytes past a 64-byte boundary in {k} of {n} processes")
                    } else {
                        format!("{off} in {k}")
                    }
                })
                .collect();
            parts.join(", ")
        }
    }
}

/// One item per cell whose output buffers were noted: where they fell, and where time
/// followed it, by how much.
pub fn alignment(cells: &[&Cell], threshold: f64) -> Vec<Item> {
    cells
        .iter()
        .filter_map(|c| {
            let mut by = [0usize; 4];
            let (mut on, mut off) = (Vec::new(), Vec::new());
            let mut bytes = 0;
            for (_, r) in c.records() {
                let Some(b) = r.buffers.iter().find(|b| b.role == Role::Output) else {
                    continue;
                };
                let Some((offset, _)) = b.usual_mod_64() else {
                    continue;
                };
                bytes = bytes.max(b.bytes);
                by[(offset / 16) as usize] += 1;
                if offset % 32 == 0 {
                    on.push(r.p50_ns as f64);
                } else {
                    off.push(r.p50_ns as f64);
                }
            }
            if by.iter().sum::<usize>() == 0 {
                return None;
            }
            let off_against_on_32 = (on.len() >= LEAST_PER_SIDE && off.len() >= LEAST_PER_SIDE)
                .then(|| shift_ratio(&on, &off, c.level))
                .flatten()
                .map(|(ratio, ci)| Comparison {
                    ratio,
                    interval: Some(ci),
                    pairs: on.len() + off.len(),
                    verdict: Some(verdict(ci, threshold, c.level)),
                    level: c.level,
                    unpaired: true,
                });
            let moved = off_against_on_32
                .is_some_and(|k| matches!(k.verdict, Some(Verdict::Faster | Verdict::Slower)));
            let figures = AlignmentFigures {
                allocator: c.spec.allocator_label(),
                workload: c.spec.workload,
                variant: c.spec.variant,
                size: c.spec.size,
                threads: c.spec.threads,
                bytes,
                processes_by_mod_64: by,
                off_against_on_32,
                moved,
            };
            Some(item(figures))
        })
        .collect()
}

/// The item of one cell's figures.
fn item(f: AlignmentFigures) -> Item {
    let lead = format!(
        "output buffer's alignment, {} {}, {} elements ({})",
        f.workload,
        f.variant,
        crate::fmt::group_thousands(f.size as i64),
        crate::fmt::Threads(f.threads),
    );
    let mut body = format!(
        "puts it ({}) {}",
        crate::fmt::human_bytes(f.bytes),
        placement(&f.processes_by_mod_64)
    );
    if let Some(k) = &f.off_against_on_32 {
        body.push_str(&format!(
            "; those 16 bytes past a 32-byte boundary: {}",
            crate::analysis::answer::phrase_than(k, "those on one")
        ));
    }
    Item::parted(
        lead,
        f.allocator.clone(),
        body,
        Figures::Alignment(Box::new(f)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::layout::BufferAlignment;
    use crate::model::spec::{Variant, Workload};

    #[test]
    fn placement_names_one_offset_or_each_with_its_count() {
        assert_eq!(
            placement(&[6, 0, 0, 0]),
            "on a 64-byte boundary in all 6 processes"
        );
        assert_eq!(
            placement(&[0, 6, 0, 0]),
            "16 bytes past a 64-byte boundary in all 6 processes"
        );
        assert_eq!(
            placement(&[2, 2, 1, 1]),
            "0 bytes past a 64-byte boundary in 2 of 6 processes, 16 in 2, 32 in 1, 48 in 1"
        );
        assert_eq!(
            placement(&[0, 0, 1, 0]),
            "32 bytes past a 64-byte boundary in its one process"
        );
        assert_eq!(
            placement(&[0, 3, 0, 3]),
            "16 bytes past a 64-byte boundary in 3 of 6 processes, 48 in 3"
        );
    }

    /// A cell of `times` (p50 ns) whose output buffers fell at `offsets` (mod 64).
    fn cell(offsets: &[u64], times: &[u64]) -> Cell {
        let template: crate::model::record::RunRecord =
            serde_json::from_str(include_str!("../../tests/data/record.json")).unwrap();
        Cell {
            spec: crate::model::run::RunSpec {
                allocator: crate::model::spec::Allocator::System,
                workload: Workload::Scale,
                variant: Variant::InPlace,
                size: 1_000_000,
                threads: 1,
                seed: 42,
                knobs: Vec::new(),
                thp: Default::default(),
                library: None,
            },
            runs: offsets
                .iter()
                .zip(times)
                .enumerate()
                .map(|(i, (&off, &t))| {
                    let mut r = template.clone();
                    r.p50_ns = t;
                    let mut mod_64 = [0; 4];
                    mod_64[(off / 16) as usize] = 9;
                    // The first, mapped block elsewhere: the usual offset still decides.
                    mod_64[1] += 1;
                    r.buffers = vec![BufferAlignment {
                        role: Role::Output,
                        bytes: 8_000_000,
                        allocations: 10,
                        mod_64,
                        first_mod_4096: 16,
                        same_mod_4096: false,
                    }];
                    (i as u32, Ok(r))
                })
                .collect(),
            level: 0.95,
            evidence: None,
        }
    }

    #[test]
    fn time_that_follows_alignment_is_said_with_its_interval_and_no_gap_is_not() {
        // Off 32: 3 % slower in every process.
        let offsets = [0, 16, 32, 48, 0, 16, 32, 48, 0, 16];
        let times: Vec<u64> = offsets
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let base = 600_000 + 1_000 * i as u64;
                if o % 32 == 0 {
                    base
                } else {
                    base * 103 / 100 + 10_000
                }
            })
            .collect();
        let c = cell(&offsets, &times);
        let items = alignment(&[&c], 0.02);
        assert_eq!(items.len(), 1);
        let Some(Figures::Alignment(f)) = &items[0].figures else {
            panic!("{:?}", items[0]);
        };
        assert_eq!(f.processes_by_mod_64, [3, 3, 2, 2]);
        assert!(f.moved, "{}", items[0].text);
        assert!(
            items[0]
                .text
                .contains("those 16 bytes past a 32-byte boundary: 1.0")
                && items[0].text.contains("slower [")
                && items[0].text.ends_with("than those on one"),
            "{}",
            items[0].text
        );
        // The same times whatever the offset: no verdict of a gap.
        let flat: Vec<u64> = (0..10).map(|i| 600_000 + 1_000 * (i % 5)).collect();
        let c = cell(&offsets, &flat);
        let items = alignment(&[&c], 0.02);
        let Some(Figures::Alignment(f)) = &items[0].figures else {
            panic!()
        };
        assert!(!f.moved, "{}", items[0].text);
        // One offset in every process (an allocator that aligns): nothing to compare.
        let c = cell(&[0; 6], &[600_000; 6]);
        let items = alignment(&[&c], 0.02);
        assert!(
            items[0]
                .text
                .ends_with("on a 64-byte boundary in all 6 processes"),
            "{}",
            items[0].text
        );
    }
}
