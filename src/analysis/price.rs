//! The price of speed: where one allocator is much faster than glibc's on the same
//! cells, how much memory it holds for it. One sentence per allocator, with the figures
//! it rests on: its time against glibc's (paired by round, with the interval and
//! verdict) and both sides' resident memory over the process's life (mean and at its
//! end, medians over the processes; [`crate::model::metric::MEMORY_METRICS`]).

use crate::analysis::answer::phrase;
use crate::analysis::cells;
use crate::analysis::findings::{AfterBurstFigures, Figures, Item, PriceFigures};
use crate::analysis::stats::{Comparison, Verdict};
use crate::model::metric::{
    MemoryFigures, Metric, FREED, HALF_RETURNED, MEM_LAST, MEM_MEAN, MEM_PEAK,
};
use crate::model::record::Cell;
use crate::model::spec::{Variant, Workload};

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

/// The sentence of `other` against the base `base` compared as `cmp`.
fn sentence(
    base: &Cell,
    other: &Cell,
    cmp: &Comparison,
    bm: &MemoryFigures,
    om: &MemoryFigures,
) -> String {
    let memory: Vec<String> = [(MEM_MEAN, "on average"), (MEM_LAST, "at its end")]
        .iter()
        .filter_map(|(m, what)| held(*m, what, bm, om))
        .collect();
    let holds = if memory.is_empty() {
        "its memory was not sampled".to_string()
    } else {
        format!("holds {}", memory.join(" and "))
    };
    format!(
        "price of speed, {} {} at {} elements ({}): {} {} than {}; {holds}",
        other.spec.workload,
        other.spec.variant,
        crate::fmt::group_thousands(other.spec.size as i64),
        crate::fmt::Threads(other.spec.threads),
        other.spec.allocator_label(),
        phrase(cmp),
        base.spec.allocator_label(),
    )
}

/// The price of speed in `cells`: per workload and thread count, the variant and size
/// (of those measured) where another allocator's time differs most from glibc's, at least
/// [`FROM_RATIO`] either way, decided (or without a verdict for too few processes, but
/// with its whole interval that far); there, one item per other allocator of that
/// variant and size. Empty where no such difference was measured.
pub fn price_of_speed(cells: &[&Cell], threshold: f64) -> Vec<Item> {
    let mut groups: Vec<(Workload, u32)> = Vec::new();
    for c in cells {
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
        for other in at
            .iter()
            .filter(same)
            .filter(|c| c.spec.allocator_label() != BASE)
        {
            let Some(cmp) = cells::compare(base, other, threshold) else {
                continue;
            };
            let om = cells::row(other).memory;
            out.push(Item {
                text: sentence(base, other, &cmp, &bm, &om),
                figures: Some(Figures::Price(Box::new(PriceFigures {
                    allocator: other.spec.allocator_label(),
                    against_allocator: base.spec.allocator_label(),
                    variant,
                    workload: w,
                    threads: t,
                    size,
                    comparison: cmp,
                    memory: om.clone(),
                    against_memory: bm.clone(),
                }))),
            });
        }
    }
    out
}

/// "half given back within 6.5 ms" / "kept until exit" of a cell's memory figures.
pub fn given_back(m: &MemoryFigures) -> String {
    match m[HALF_RETURNED] {
        Some(ms) => format!("half given back within {}", HALF_RETURNED.show(ms)),
        None => "kept until exit".into(),
    }
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
            let stats = c
                .records()
                .next()
                .map(|(_, r)| r.allocator_stats_after_idle.clone())
                .unwrap_or_default();
            let own = if stats.is_empty() {
                String::new()
            } else {
                format!(
                    "; its own statistics at the end of the idle: {}",
                    stats
                        .iter()
                        .map(|(k, v)| format!("{k} {}", crate::fmt::human_bytes(*v)))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let text = format!(
                "after the burst, {} {} at {} elements ({}), {} s idle: {} held {} at its peak, {} once every buffer was freed and {} at the end of the idle; {}{own}",
                c.spec.workload,
                c.spec.variant,
                crate::fmt::group_thousands(c.spec.size as i64),
                crate::fmt::Threads(c.spec.threads),
                crate::fmt::trim_float(idle_ms / 1e3),
                c.spec.allocator_label(),
                crate::fmt::human_bytes(peak.round() as u64),
                crate::fmt::human_bytes(from.round() as u64),
                crate::fmt::human_bytes(last.round() as u64),
                given_back(&m)
            );
            Some(Item {
                text,
                figures: Some(Figures::AfterBurst(Box::new(AfterBurstFigures {
                    allocator: c.spec.allocator_label(),
                    variant: c.spec.variant,
                    workload: c.spec.workload,
                    threads: c.spec.threads,
                    size: c.spec.size,
                    idle_ms,
                    processes: c.records().count(),
                    memory: m.clone(),
                    allocator_stats: stats,
                }))),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_or_less_says_which_way_and_ignores_a_page_or_two() {
        let m = (1u64 << 20) as f64;
        assert_eq!(more_or_less(15.3 * m, 27.7 * m), "12.4 MiB more");
        assert_eq!(more_or_less(27.7 * m, 15.3 * m), "12.4 MiB less");
        assert_eq!(more_or_less(m, m + 8192.0), "the same");
    }
}
