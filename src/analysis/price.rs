//! The price of speed: where one allocator is much faster than glibc's on the same
//! cells, how much memory it holds for it. One sentence per allocator, with the figures
//! it rests on: its time against glibc's (paired by round, with the interval and
//! verdict) and both sides' resident memory over the process's life (the mean, and the
//! end only where both sides' processes ended in a defined state, the end of an idle
//! phase after the burst; medians over the processes;
//! [`crate::model::metric::MEMORY_METRICS`]).

use crate::analysis::answer::phrase_than;
use crate::analysis::cells;
use crate::analysis::findings::{
    AfterBurstFigures, Figures, HeldSplit, HugePagesFigures, Item, PriceFigures,
};
use crate::analysis::stats::{Comparison, Verdict};
use crate::model::metric::{
    MemoryFigures, Metric, FAULTED_BYTES, FREED, HALF_RETURNED, HUGE_COVERAGE, HUGE_FAULTS,
    MEM_HWM, MEM_LAST, MEM_MEAN, MEM_PEAK, MINOR_FAULTS,
};
use crate::model::record::Cell;
use crate::model::spec::{Thp, Variant, Workload};

/// The base every allocator's price is stated against: glibc's malloc.
pub const BASE: &str = "system";

/// The least time ratio (either way) that makes a group's price worth stating: twice as
/// fast or slow, decided.
pub const FROM_RATIO: f64 = 2.0;

/// "12.4 MiB more" / "3.0 MiB less" / "the same" of `new` − `base` bytes.
fn more_or_less(base: f64, new: f64) -> String {
    let d = new - base;
    let text = crate::fmt::human_bytes(d.abs().round() as u64);
    if d.abs() < 64.0 * 1024.0 {
        "the same".into()
    } else if d > 0.0 {
        format!("{text} more")
    } else {
        format!("{text} less")
    }
}

/// "holds 12.4 MiB more on average (27.7 MiB against 15.3 MiB)" for entry `m`; None where
/// either side lacks it.
fn held(m: Metric, what: &str, base: &MemoryFigures, new: &MemoryFigures) -> Option<String> {
    let (b, n) = (base[m]?, new[m]?);
    Some(format!(
        "{} {what} ({} against {})",
        more_or_less(b, n),
        crate::fmt::human_bytes(n.round() as u64),
        crate::fmt::human_bytes(b.round() as u64)
    ))
}

/// The idle phase after the burst, in seconds, that every process of `c` ran (its
/// budget's `idle_time`); None where there was none.
fn idle_s(c: &Cell) -> Option<f64> {
    let mut idle = c.records().map(|(_, r)| r.budget.idle_ns);
    let first = idle.next()?;
    (first > 0 && idle.all(|n| n == first)).then(|| first as f64 / 1e9)
}

/// The words of `other` against the base `base` compared as `cmp`: (lead, subject,
/// body). Both sides' memory: the mean, and the end where it is a defined state (see
/// [`idle_s`]).
fn sentence(
    base: &Cell,
    other: &Cell,
    cmp: &Comparison,
    bm: &MemoryFigures,
    om: &MemoryFigures,
) -> (String, String, String) {
    // The last sample of a process that ends straight after its burst falls at a random
    // point of what the allocator does there (glibc's trim and regrow): it is a figure
    // only after an idle phase, the same on both sides.
    let end = match (idle_s(base), idle_s(other)) {
        (Some(a), Some(b)) if a == b => Some(format!(
            "at the end of its {} s idle",
            crate::fmt::trim_float(a)
        )),
        _ => None,
    };
    let memory: Vec<String> = std::iter::once((MEM_MEAN, "on average".to_string()))
        .chain(end.map(|e| (MEM_LAST, e)))
        .filter_map(|(m, what)| held(m, &what, bm, om))
        .collect();
    let holds = if memory.is_empty() {
        "its memory was not sampled".to_string()
    } else {
        format!("holds {}", memory.join(" and "))
    };
    (
        format!(
            "price of speed, {} {} at {} elements ({})",
            other.spec.workload,
            other.spec.variant,
            crate::fmt::group_thousands(other.spec.size as i64),
            crate::fmt::Threads(other.spec.threads),
        ),
        other.spec.allocator_label(),
        format!(
            "{}; {holds}",
            phrase_than(cmp, &base.spec.allocator_label())
        ),
    )
}

/// Every item of the answer beside the comparisons of time, in the order every surface
/// lists them: the price of speed, what was held after the burst, what huge pages did,
/// and where time followed the alignment of a cell's output buffer (the rest of
/// [`crate::analysis::layout::alignment`] is a finding, not an answer).
/// Each is marked by the processes its cells have against the `planned` of each
/// ([`Item::rests_on`]).
pub fn beside_time(cells: &[&Cell], threshold: f64, planned: Option<usize>) -> Vec<Item> {
    let mut items = crate::analysis::service::tails(cells, threshold);
    items.extend(price_of_speed(cells, threshold));
    items.extend(after_burst(cells));
    items.extend(huge_pages(cells, threshold));
    items.extend(
        crate::analysis::layout::alignment(cells, threshold)
            .into_iter()
            .filter(|i| matches!(&i.figures, Some(Figures::Alignment(a)) if a.moved)),
    );
    items
        .into_iter()
        .map(|i| i.rests_on(cells, planned))
        .collect()
}

/// The price of speed in `cells`: per workload and thread count, the variant and size
/// (of those measured) where another allocator's time differs most from glibc's, at least
/// [`FROM_RATIO`] either way, decided (or without a verdict for too few processes, but
/// with its whole interval that far); there, one item per other allocator of that
/// variant and size. Empty where no such difference was measured.
pub fn price_of_speed(cells: &[&Cell], threshold: f64) -> Vec<Item> {
    let mut groups: Vec<(Workload, u32)> = Vec::new();
    // A service's price is its tail ([`crate::analysis::service`]), not its median.
    for c in cells
        .iter()
        .filter(|c| c.spec.workload != Workload::Service)
    {
        if !groups.contains(&(c.spec.workload, c.spec.threads)) {
            groups.push((c.spec.workload, c.spec.threads));
        }
    }
    let mut out = Vec::new();
    for (w, t) in groups {
        let at: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.spec.workload == w && c.spec.threads == t && c.records().next().is_some())
            .copied()
            .collect();
        // The (variant, size) with the largest decided difference against glibc.
        let mut best: Option<(f64, Variant, u64)> = None;
        for base in at.iter().filter(|c| c.spec.allocator_label() == BASE) {
            for other in at.iter().filter(|c| {
                c.spec.allocator_label() != BASE
                    && c.spec.thp == base.spec.thp
                    && c.spec.variant == base.spec.variant
                    && c.spec.size == base.spec.size
            }) {
                let Some(cmp) = cells::compare(base, other, threshold) else {
                    continue;
                };
                // Decided, or too few processes for a verdict but the whole interval
                // beyond the ratio (said so in the sentence's "no verdict").
                let beyond = |x: f64| x.ln().abs() >= FROM_RATIO.ln();
                let decided = matches!(cmp.verdict, Some(Verdict::Faster | Verdict::Slower))
                    || matches!(cmp.verdict, None | Some(Verdict::Undecided))
                        && cmp.interval.is_some_and(|i| {
                            beyond(i.low) && beyond(i.high) && (i.low > 1.0) == (i.high > 1.0)
                        });
                let size = cmp.ratio.ln().abs();
                if decided && size >= FROM_RATIO.ln() && best.is_none_or(|b| size > b.0) {
                    best = Some((size, base.spec.variant, base.spec.size));
                }
            }
        }
        let Some((_, variant, size)) = best else {
            continue;
        };
        let same = |c: &&&Cell| c.spec.variant == variant && c.spec.size == size;
        let Some(base) = at
            .iter()
            .filter(same)
            .find(|c| c.spec.allocator_label() == BASE)
        else {
            continue;
        };
        let bm = cells::row(base).memory;
        // Against glibc's with THP as the machine gives it (the base's label says so):
        // a cell with THP off or advised is not another allocator.
        for other in at
            .iter()
            .filter(same)
            .filter(|c| c.spec.allocator_label() != BASE && c.spec.thp == base.spec.thp)
        {
            let Some(cmp) = cells::compare(base, other, threshold) else {
                continue;
            };
            let om = cells::row(other).memory;
            let (lead, subject, body) = sentence(base, other, &cmp, &bm, &om);
            out.push(Item::parted(
                lead,
                subject,
                body,
                Figures::Price(Box::new(PriceFigures {
                    allocator: other.spec.allocator_label(),
                    against_allocator: base.spec.allocator_label(),
                    variant,
                    workload: w,
                    threads: t,
                    size,
                    comparison: cmp,
                    memory: om.clone(),
                    against_memory: bm.clone(),
                })),
            ));
        }
    }
    out
}

/// "half given back within 6.5 ms" / "less than half given back within the 2 s idle"
/// of a cell's memory figures, with an idle phase of `idle_s` seconds. What was not
/// given back within the idle may still be later (jemalloc's background thread did at
/// about 13 s): the words say what was measured, not "until exit".
pub fn given_back(m: &MemoryFigures, idle_s: f64) -> String {
    match m[HALF_RETURNED] {
        Some(ms) => format!("half given back within {}", HALF_RETURNED.show(ms)),
        None => format!(
            "less than half given back within the {} s idle",
            crate::fmt::trim_float(idle_s)
        ),
    }
}

/// "14.2 MiB went back at the free, 0.1 MiB more during the 2 s idle" from the peak, the
/// resident set once every buffer was freed (the idle's first sample) and at its end:
/// how much the free itself gave back against what the idle did.
pub fn drops(peak: f64, freed: f64, last: f64, idle_s: f64) -> String {
    let bytes = |x: f64| crate::fmt::human_bytes(x.abs().round() as u64);
    let at_free = if freed < peak {
        format!("{} went back at the free", bytes(peak - freed))
    } else {
        "nothing went back at the free".to_string()
    };
    let idle = crate::fmt::trim_float(idle_s);
    let during = if last < freed {
        format!("{} more during the {idle} s idle", bytes(freed - last))
    } else if last > freed {
        format!(
            "it grew by {} during the {idle} s idle",
            bytes(last - freed)
        )
    } else {
        format!("nothing more during the {idle} s idle")
    };
    format!("{at_free}, {during}")
}

/// After the burst: one item per cell whose workers idled after their measured phase
/// (budget `idle_time`), in the cells' order: what it held when its buffers were freed,
/// what it held at the end of the idle, and how long until half was given back.
pub fn after_burst(cells: &[&Cell]) -> Vec<Item> {
    cells
        .iter()
        .filter_map(|c| {
            let idle_ns = c.records().next()?.1.budget.idle_ns;
            let row = cells::row(c);
            let m = row.memory;
            let (peak, from, last) = (m[MEM_PEAK]?, m[FREED]?, m[MEM_LAST]?);
            if idle_ns == 0 {
                return None;
            }
            let idle_ms = idle_ns as f64 / 1e6;
            // The split is one process's: its statistics, its live data and its own
            // resident set at the end (not the cell's median, which may be another
            // process's).
            let first = c.records().next().map(|(_, r)| r);
            let stats = first
                .map(|r| r.allocator_stats_after_idle.clone())
                .unwrap_or_default();
            let split = first.and_then(|r| {
                let resident = r.memory[MEM_LAST]?;
                Some(HeldSplit::of(
                    c.spec.allocator,
                    &stats,
                    r.live_bytes_after_idle?,
                    resident.round() as u64,
                ))
            });
            let own = match &split {
                Some(h) => format!("; {}", h.sentence()),
                None if stats.is_empty() => String::new(),
                None => format!(
                    "; its own statistics at the end of the idle: {}",
                    stats
                        .iter()
                        .map(|(k, v)| format!("{k} {}", crate::fmt::human_bytes(*v)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            let lead = format!(
                "after the burst, {} {} at {} elements ({}), {} s idle",
                c.spec.workload,
                c.spec.variant,
                crate::fmt::group_thousands(c.spec.size as i64),
                crate::fmt::Threads(c.spec.threads),
                crate::fmt::trim_float(idle_ms / 1e3),
            );
            // The peak as the kernel kept it where the workers read it (the samples can
            // fall either side of it), else the highest sample; said which.
            let (peak, source) = match m[MEM_HWM] {
                Some(hwm) => (hwm, "the kernel's high-water mark, VmHWM"),
                None => (peak, "sampled"),
            };
            let idle_s = idle_ms / 1e3;
            let body = format!(
                "held {} at its peak ({source}), {} once every buffer was freed and {} at the end of the idle ({}); {}{own}",
                crate::fmt::human_bytes(peak.round() as u64),
                crate::fmt::human_bytes(from.round() as u64),
                crate::fmt::human_bytes(last.round() as u64),
                drops(peak, from, last, idle_s),
                given_back(&m, idle_s)
            );
            Some(Item::parted(
                lead,
                c.spec.allocator_label(),
                body,
                Figures::AfterBurst(Box::new(AfterBurstFigures {
                    allocator: c.spec.allocator_label(),
                    variant: c.spec.variant,
                    workload: c.spec.workload,
                    threads: c.spec.threads,
                    size: c.spec.size,
                    idle_ms,
                    processes: c.records().count(),
                    memory: m.clone(),
                    allocator_stats: stats,
                    held: split,
                })),
            ))
        })
        .collect()
}

/// "808 minor faults per iteration against 3,874 (5 of them huge pages); 15.1 MiB faulted
/// in against 15.1 MiB; 46 % of its memory in huge pages; holds 0.1 MiB more on average
/// (…)" of a huge-pages pair: each part where both sides have it and one is not zero.
pub fn huge_page_figures(h: &HugePagesFigures) -> String {
    let (n, b) = (&h.per_iter, &h.against_per_iter);
    let mut parts = Vec::new();
    if let (Some(x), Some(y)) = (n[MINOR_FAULTS], b[MINOR_FAULTS]) {
        if x.max(y) >= 0.5 {
            let huge = match n[HUGE_FAULTS] {
                Some(k) if k >= 0.005 => {
                    format!(" ({} of them huge pages)", crate::fmt::fmt_count(k))
                }
                _ => String::new(),
            };
            parts.push(format!(
                "{} minor faults per iteration against {}{huge}",
                MINOR_FAULTS.show(x),
                MINOR_FAULTS.show(y)
            ));
        }
    }
    if let (Some(x), Some(y)) = (n[FAULTED_BYTES], b[FAULTED_BYTES]) {
        if x.max(y) > 0.0 {
            parts.push(format!(
                "{} faulted in against {}",
                FAULTED_BYTES.show(x),
                FAULTED_BYTES.show(y)
            ));
        }
    }
    if let Some(x) = h.memory[HUGE_COVERAGE] {
        parts.push(format!("{} % of its memory in huge pages", x.round()));
    }
    if let Some(held) = held(MEM_MEAN, "on average", &h.against_memory, &h.memory) {
        parts.push(format!("holds {held}"));
    }
    parts.join("; ")
}

/// Huge pages: one item per cell measured with huge pages (THP `system` or `advise`)
/// beside the same cell (allocator and knobs, workload, variant, size, threads) with THP
/// off for the worker (`never`): its time against that cell's, paired by round, its
/// faults split by the page size they mapped, the bytes faulted in (the same memory
/// zeroed either way) and the share of its memory in huge pages. In the cells' order.
pub fn huge_pages(cells: &[&Cell], threshold: f64) -> Vec<Item> {
    let same = |a: &Cell, b: &Cell| {
        a.spec.allocator_spec() == b.spec.allocator_spec()
            && a.spec.workload == b.spec.workload
            && a.spec.variant == b.spec.variant
            && a.spec.size == b.spec.size
            && a.spec.threads == b.spec.threads
    };
    cells
        .iter()
        .filter(|c| c.spec.thp != Thp::Never)
        .filter_map(|c| {
            let base = cells
                .iter()
                .find(|b| b.spec.thp == Thp::Never && same(b, c))?;
            let cmp = cells::compare(base, c, threshold)?;
            let (row, base_row) = (cells::row(c), cells::row(base));
            let figures = HugePagesFigures {
                allocator: c.spec.allocator_spec().to_string(),
                thp: c.spec.thp,
                variant: c.spec.variant,
                workload: c.spec.workload,
                threads: c.spec.threads,
                size: c.spec.size,
                comparison: cmp,
                per_iter: row.per_iter.clone(),
                against_per_iter: base_row.per_iter.clone(),
                memory: row.memory.clone(),
                against_memory: base_row.memory.clone(),
                moved: false,
            };
            let figures = HugePagesFigures {
                moved: figures.moves(),
                ..figures
            };
            let lead = format!(
                "huge pages, {} {} at {} elements ({})",
                c.spec.workload,
                c.spec.variant,
                crate::fmt::group_thousands(c.spec.size as i64),
                crate::fmt::Threads(c.spec.threads),
            );
            let body = format!(
                "{}; {}",
                phrase_than(&figures.comparison, "THP off"),
                huge_page_figures(&figures)
            );
            Some(Item::parted(
                lead,
                c.spec.allocator_label(),
                body,
                Figures::HugePages(Box::new(figures)),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell of six processes, each `p50` ns, holding `mean` MiB on average and `end`
    /// MiB at its last sample, after an idle of `idle_ns`.
    fn held_cell(allocator: &str, p50: u64, mean: f64, end: f64, idle_ns: u64) -> Cell {
        let mut c = crate::analysis::cells::test_cell(allocator, &[(p50, 100.0); 6]);
        let mib = 1048576.0;
        for (_, r) in c.runs.iter_mut() {
            let r = r.as_mut().unwrap();
            r.memory[MEM_MEAN] = Some(mean * mib);
            r.memory[MEM_LAST] = Some(end * mib);
            r.budget.idle_ns = idle_ns;
        }
        c
    }

    #[test]
    fn the_price_states_an_end_only_after_an_idle_phase() {
        // Without an idle the last sample is a random point of the trim/regrow cycle:
        // the sentence holds the mean alone.
        let (base, fast) = (
            held_cell("system", 3000, 14.0, 10.7, 0),
            held_cell("jemalloc", 1000, 12.0, 9.1, 0),
        );
        let items = price_of_speed(&[&base, &fast], 0.02);
        assert_eq!(items.len(), 1, "{items:?}");
        let text = &items[0].text;
        assert!(
            text.contains("holds 2.0 MiB less on average (12.0 MiB against 14.0 MiB)"),
            "{text}"
        );
        assert!(!text.contains("end"), "{text}");
        // After the same 2 s idle on both sides, the end is a defined state: stated,
        // with the idle it followed.
        let (base, fast) = (
            held_cell("system", 3000, 14.0, 10.7, 2_000_000_000),
            held_cell("jemalloc", 1000, 12.0, 9.1, 2_000_000_000),
        );
        let text = price_of_speed(&[&base, &fast], 0.02)[0].text.clone();
        assert!(
            text.contains("and 1.6 MiB less at the end of its 2 s idle (9.1 MiB against 10.7 MiB)"),
            "{text}"
        );
        // Idles of different lengths are not one state.
        let base = held_cell("system", 3000, 14.0, 10.7, 1_000_000_000);
        let text = price_of_speed(&[&base, &fast], 0.02)[0].text.clone();
        assert!(!text.contains("end"), "{text}");
    }

    #[test]
    fn after_the_burst_says_what_the_free_and_the_idle_gave_back() {
        let mib = 1048576.0;
        assert_eq!(
            drops(24.0 * mib, 8.0 * mib, 7.5 * mib, 2.0),
            "16.0 MiB went back at the free, 512.0 KiB more during the 2 s idle"
        );
        assert_eq!(
            drops(24.0 * mib, 24.0 * mib, 25.0 * mib, 0.4),
            "nothing went back at the free, it grew by 1.0 MiB during the 0.4 s idle"
        );
        let mut m = MemoryFigures::default();
        assert_eq!(
            given_back(&m, 2.0),
            "less than half given back within the 2 s idle"
        );
        m[HALF_RETURNED] = Some(6.5);
        assert!(given_back(&m, 2.0).starts_with("half given back within 6.5"));
    }

    #[test]
    fn the_held_memory_splits_by_the_allocators_own_figure() {
        let m = 1u64 << 20;
        let stats: std::collections::BTreeMap<String, u64> = [
            ("resident".to_string(), 21 * m),
            ("allocated".to_string(), m / 2),
        ]
        .into();
        let h = HeldSplit::of(
            crate::model::spec::Allocator::Jemalloc,
            &stats,
            m / 2,
            22 * m,
        );
        assert_eq!((h.held_free, h.outside), (Some(41 * m / 2), Some(m)));
        assert!(h.sentence().starts_with("of the 22.0 MiB its first process held at the end: 512.0 KiB live data, 20.5 MiB held free by the allocator (its stats.resident: 21.0 MiB), 1.0 MiB outside"), "{}", h.sentence());
        // A figure above the resident set (mimalloc's commit accounting) is said so, by
        // how much: no part below zero.
        let stats: std::collections::BTreeMap<String, u64> =
            [("current_rss".to_string(), 25 * m)].into();
        let h = HeldSplit::of(
            crate::model::spec::Allocator::Mimalloc,
            &stats,
            m / 2,
            16 * m,
        );
        assert_eq!((h.outside, h.not_resident), (None, Some(9 * m)));
        assert!(
            h.sentence().ends_with("its figure is 9.0 MiB more than the resident set: that much of what it counts is not resident, so the rest of the process (code, stacks) cannot be told apart from it"),
            "{}",
            h.sentence()
        );
        // A figure below the live data (snmalloc's leaves out its large allocations).
        let stats: std::collections::BTreeMap<String, u64> =
            [("current_memory_usage".to_string(), m)].into();
        let h = HeldSplit::of(
            crate::model::spec::Allocator::Snmalloc,
            &stats,
            3 * m,
            8 * m,
        );
        assert_eq!((h.held_free, h.live_beyond_figure), (None, Some(2 * m)));
        assert!(
            h.sentence()
                .contains("(its current_memory_usage, 1.0 MiB, is 2.0 MiB less than the live data"),
            "{}",
            h.sentence()
        );
        assert!(!h.sentence().contains('−'), "{}", h.sentence());
        // TCMalloc's held memory is its heap_size, which leaves out what it returned to
        // the OS already: not heap_size less pageheap_unmapped_bytes a second time (the
        // figures of a worker at the end of its idle, release_at_idle=true, 2026-12-07).
        let stats: std::collections::BTreeMap<String, u64> = [
            ("heap_size".to_string(), 4_317_184),
            ("current_allocated_bytes".to_string(), 624_640),
            ("pageheap_free_bytes".to_string(), 2_793_472),
            ("pageheap_unmapped_bytes".to_string(), 16_654_336),
        ]
        .into();
        let h = HeldSplit::of(
            crate::model::spec::Allocator::Tcmalloc,
            &stats,
            616_042,
            14_802_944,
        );
        assert_eq!(h.allocator_holds, Some(4_317_184));
        assert_eq!(
            (h.held_free, h.outside),
            (Some(4_317_184 - 616_042), Some(14_802_944 - 4_317_184))
        );
        assert!(h.sentence().contains("3.5 MiB held free by the allocator (its generic.heap_size: 4.1 MiB), 10.0 MiB outside"), "{}", h.sentence());
        // No figure of its own: live data only.
        let h = HeldSplit::of(
            crate::model::spec::Allocator::Rpmalloc,
            &Default::default(),
            m,
            7 * m,
        );
        assert_eq!(h.held_free, None);
        assert!(h.sentence().contains("gives no figure"), "{}", h.sentence());
    }

    #[test]
    fn more_or_less_says_which_way_and_ignores_a_page_or_two() {
        let m = (1u64 << 20) as f64;
        assert_eq!(more_or_less(15.3 * m, 27.7 * m), "12.4 MiB more");
        assert_eq!(more_or_less(27.7 * m, 15.3 * m), "12.4 MiB less");
        assert_eq!(more_or_less(m, m + 8192.0), "the same");
    }
}
