//! Explanation lines computed from summary rows: how much slower out-of-place is than
//! in-place and which counters go with it, and the notes on unavailable counters.

use crate::model::record::Outcome;
use crate::model::spec::{Allocator, Variant};
use crate::model::summary::SummaryRow;
use crate::ui::fmt::{fmt_ns, signed};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Per-iteration counters compared in the explanation lines, with the smallest
/// difference worth naming.
type Cause = (&'static str, fn(&SummaryRow) -> Option<f64>, f64);

const CAUSES: [Cause; 7] = [
    ("minor faults", |r| r.minflt_per_iter, 1.0),
    ("major faults", |r| r.majflt_per_iter, 0.1),
    ("brk", |r| r.brk_per_iter, 0.1),
    ("mmap", |r| r.mmap_per_iter, 0.1),
    ("munmap", |r| r.munmap_per_iter, 0.1),
    ("madvise", |r| r.madvise_per_iter, 0.1),
    ("mremap", |r| r.mremap_per_iter, 0.1),
];

/// One line per allocator: how much slower out-of-place is than in-place, and the
/// counter differences that go with it.
pub fn explanations(rows: &[SummaryRow]) -> Vec<String> {
    let mut by_alloc: BTreeMap<(Allocator, &str, u64), BTreeMap<Variant, &SummaryRow>> =
        BTreeMap::new();
    for r in rows.iter().filter(|r| r.status.is_ok()) {
        by_alloc
            .entry((r.allocator, r.allocator_spec.as_str(), r.size))
            .or_default()
            .insert(r.variant, r);
    }
    let width = by_alloc.keys().map(|k| k.1.len()).max().unwrap_or(0) + 1;
    let mut lines = Vec::new();
    for ((_, alloc, _), variants) in &by_alloc {
        let Some(base) = variants.get(&Variant::InPlace) else {
            continue;
        };
        let mut parts = Vec::new();
        for other in [Variant::OutOfPlace] {
            let Some(o) = variants.get(&other) else {
                continue;
            };
            let (Some(b50), Some(o50)) = (base.p50_ns, o.p50_ns) else {
                continue;
            };
            let ratio = o50 as f64 / b50.max(1) as f64;
            // Ratios that print as 1.00x either way are no difference.
            let speed = if (ratio - 1.0).abs() < 0.005 {
                "as fast as".to_string()
            } else if ratio > 1.0 {
                format!("{ratio:.2}x slower than")
            } else {
                format!("{:.2}x faster than", 1.0 / ratio)
            };
            let mut s = format!(
                "{other} is {speed} in-place (p50 {} vs {})",
                fmt_ns(o50 as f64),
                fmt_ns(b50 as f64)
            );
            let diffs: Vec<String> = CAUSES
                .iter()
                .filter_map(|(name, get, min)| {
                    let d = get(o)? - get(base)?;
                    (d.abs() >= *min).then(|| format!("{} {name}", signed(d)))
                })
                .collect();
            if diffs.is_empty() {
                s.push_str("; no difference in faults or memory syscalls");
            } else {
                let _ = write!(s, "; per iteration {}", diffs.join(", "));
            }
            parts.push(s);
        }
        if !parts.is_empty() {
            lines.push(format!(
                "{:width$} {}",
                format!("{alloc}:"),
                parts.join(". ")
            ));
        }
    }
    lines
}

/// Each distinct reason a counter was unavailable, once, with the runs it affected.
pub fn unavailable_notes(outcomes: &[Outcome]) -> Vec<String> {
    let mut notes: BTreeMap<(String, String), usize> = BTreeMap::new();
    for o in outcomes {
        if let Ok(r) = &o.result {
            for (what, why) in &r.unavailable {
                *notes.entry((what.clone(), why.clone())).or_default() += 1;
            }
        }
    }
    notes
        .into_iter()
        .map(|((what, why), n)| format!("{what} unavailable ({n} runs): {why}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::sample as row;

    #[test]
    fn explanation_names_ratio_and_counter_differences() {
        let rows = vec![
            row("system", "in-place", 2_000_000, 0.0, Some(0.0)),
            row("system", "out-of-place", 8_000_000, 3906.0, Some(3.0)),
            row("mimalloc", "in-place", 2_000_000, 0.0, None),
            row("mimalloc", "out-of-place", 2_100_000, 0.5, None),
        ];
        let lines = explanations(&rows);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("system:"), "{lines:?}");
        assert!(
            lines[0].contains("out-of-place is 4.00x slower than in-place"),
            "{lines:?}"
        );
        assert!(
            lines[0].contains("+3,906 minor faults, +3.00 brk"),
            "{lines:?}"
        );
        assert!(lines[1].contains("1.05x slower"), "{lines:?}");
        assert!(lines[1].contains("no difference"), "{lines:?}");
    }

    #[test]
    fn medians_that_print_as_one_x_are_the_same_speed() {
        let rows = vec![
            row("system", "in-place", 2_000_000, 0.0, Some(0.0)),
            row("system", "out-of-place", 2_009_000, 0.0, Some(0.0)),
        ];
        let lines = explanations(&rows);
        assert!(
            lines[0].contains("out-of-place is as fast as in-place"),
            "{lines:?}"
        );
    }
}
