//! Explanation lines computed from summary rows: how much slower out-of-place is than
//! in-place and which counters go with it, and the notes on unavailable counters.

use crate::analysis::cells;
use crate::analysis::pairs::{against_fastest, against_in_place};
use crate::analysis::stats::{Comparison, Verdict};
use crate::fmt::{fmt_ns, human_bytes, signed};
use crate::model::metric::COUNTS;
use crate::model::record::{Cell, Outcome};
use crate::model::spec::{Allocator, Choice, Variant};
use crate::model::summary::SummaryRow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The per-iteration counter differences `row - base` worth naming (each from its
/// registry threshold): "+3,906 minor faults", "+3.00 brk".
fn counter_diffs(row: &SummaryRow, base: &SummaryRow) -> Vec<String> {
    COUNTS
        .iter()
        .filter_map(|m| {
            let d = row.per_iter[*m]? - base.per_iter[*m]?;
            m.named(d).then(|| format!("{} {}", signed(d), m.label))
        })
        .collect()
}

/// One line per allocator for runs of one process each (`alloclab run`): how much slower
/// out-of-place is than in-place (no interval from one process) and the counter
/// differences that go with it.
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
                "{other} is {speed} in-place (p50 {} vs {}; one process each, so no interval)",
                fmt_ns(o50 as f64),
                fmt_ns(b50 as f64)
            );
            let diffs = counter_diffs(o, base);
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

/// Smallest ratio a knob-set finding names (runs of one process each have no interval,
/// and the process-to-process noise here is 7–13 %).
const KNOB_FINDING_RATIO: f64 = 1.5;

/// One line per knob set (or THP setting) that changes a variant's p50 by
/// [`KNOB_FINDING_RATIO`] or more against its allocator's defaults, in every variant —
/// also the variants a set was not meant for (`system:trim_threshold=1G` makes the
/// in-place case ~10x slower while it targets out-of-place), with the fault, syscall and
/// RSS differences. Rows are compared within the same workload, size and thread count.
///
/// With `cells` (index-aligned with `rows`, from replicated processes), each line also
/// gets the paired ratio with its interval and verdict against `threshold`.
pub fn knob_findings(rows: &[SummaryRow], cells: Option<&[Cell]>, threshold: f64) -> Vec<String> {
    let ok: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].status.is_ok())
        .collect();
    let mut lines = Vec::new();
    for &i in &ok {
        let r = &rows[i];
        let default = r.allocator.name();
        if r.allocator_spec == default {
            continue;
        }
        let Some(&b) = ok.iter().find(|&&b| {
            let b = &rows[b];
            b.allocator_spec == default
                && b.allocator == r.allocator
                && (b.workload, b.size, b.threads, b.variant)
                    == (r.workload, r.size, r.threads, r.variant)
        }) else {
            continue;
        };
        let base = &rows[b];
        let (Some(b50), Some(r50)) = (base.p50_ns, r.p50_ns) else {
            continue;
        };
        let ratio = r50 as f64 / b50.max(1) as f64;
        if ratio < KNOB_FINDING_RATIO && ratio > 1.0 / KNOB_FINDING_RATIO {
            continue;
        }
        let speed = if ratio > 1.0 {
            format!("{ratio:.1}x slower")
        } else {
            format!("{:.1}x faster", 1.0 / ratio)
        };
        let mut s = format!(
            "{}: {} is {speed} than with {default}'s defaults (p50 {} vs {})",
            r.allocator_spec,
            r.variant,
            fmt_ns(r50 as f64),
            fmt_ns(b50 as f64)
        );
        if let Some(c) = cells.and_then(|c| cells::compare(&c[b], &c[i], threshold)) {
            let _ = write!(s, ", paired rounds: {}", describe(&c));
        }
        let diffs = counter_diffs(r, base);
        if !diffs.is_empty() {
            let _ = write!(s, "; per iteration {}", diffs.join(", "));
        }
        if let (Some(b), Some(x)) = (base.rss_end_bytes, r.rss_end_bytes) {
            let _ = write!(s, "; RSS {} vs {}", human_bytes(x), human_bytes(b));
        }
        lines.push(s);
    }
    lines
}

/// A ratio in words with its interval and verdict: "8.10x slower [7.90x, 8.31x]",
/// "no significant difference (1.01x [0.99x, 1.03x])", or, from one process, the bare
/// ratio and why there is no interval.
pub fn describe(c: &Comparison) -> String {
    let x = |v: f64| format!("{v:.2}x");
    match (c.verdict, c.interval) {
        (Some(Verdict::Slower), Some(ci)) => {
            format!("{} slower [{}, {}]", x(c.ratio), x(ci.low), x(ci.high))
        }
        (Some(Verdict::Faster), Some(ci)) => format!(
            "{} faster [{}, {}]",
            x(1.0 / c.ratio),
            x(1.0 / ci.high),
            x(1.0 / ci.low)
        ),
        (Some(Verdict::Undecided), Some(ci)) => format!(
            "undecided ({} [{}, {}], only a {:.1} % interval)",
            x(c.ratio),
            x(ci.low),
            x(ci.high),
            100.0 * ci.coverage,
        ),
        (_, Some(ci)) => format!(
            "no significant difference ({} [{}, {}])",
            x(c.ratio),
            x(ci.low),
            x(ci.high)
        ),
        (_, None) => format!("{} (one process: no interval)", x(c.ratio)),
    }
}

/// The explanation lines of cells measured in paired rounds: per allocator, each
/// variant against in-place with its interval, verdict and the counter differences; per
/// variant, every allocator against the fastest, and the memory price of the fastest.
pub fn cell_explanations(cells: &[&Cell], rows: &[SummaryRow], threshold: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let width = rows
        .iter()
        .map(|r| r.allocator_spec.len())
        .max()
        .unwrap_or(0)
        + 1;
    for (base, others) in against_in_place(rows) {
        let mut parts = Vec::new();
        for i in others {
            let Some(c) = cells::compare(cells[base], cells[i], threshold) else {
                continue;
            };
            let mut s = format!(
                "{} {}{}",
                rows[i].variant,
                describe(&c),
                over_behaviours(&[&rows[base], &rows[i]])
            );
            let diffs = counter_diffs(&rows[i], &rows[base]);
            if !diffs.is_empty() {
                let _ = write!(s, " ({}/it)", diffs.join(", "));
            }
            parts.push(s);
        }
        if !parts.is_empty() {
            lines.push(format!(
                "{:width$} vs in-place: {}",
                format!("{}:", rows[base].allocator_spec),
                parts.join("; ")
            ));
        }
    }
    for (fastest, others) in against_fastest(rows) {
        let f = &rows[fastest];
        let mut s = format!(
            "{}: fastest {} (p50 {}, RSS {})",
            f.variant,
            f.allocator_spec,
            f.p50_ns.map_or("n/a".into(), |v| fmt_ns(v as f64)),
            f.rss_end_bytes.map_or("n/a".into(), human_bytes)
        );
        for i in others {
            if let Some(c) = cells::compare(cells[fastest], cells[i], threshold) {
                let _ = write!(
                    s,
                    "; {} {}{} (RSS {})",
                    rows[i].allocator_spec,
                    describe(&c),
                    over_behaviours(&[f, &rows[i]]),
                    rows[i].rss_end_bytes.map_or("n/a".into(), human_bytes)
                );
            }
        }
        lines.push(s);
    }
    lines.extend(behaviour_notes(rows));
    lines
}

/// " (over two behaviours of a p50: …)" when a compared cell's processes had p50s in two
/// or more groups; empty otherwise.
fn over_behaviours(compared: &[&SummaryRow]) -> String {
    let which: Vec<String> = compared
        .iter()
        .filter(|r| r.behaviours.iter().any(|b| b.figure == "p50"))
        .map(|r| format!("{} {}", r.allocator_spec, r.variant))
        .collect();
    if which.is_empty() {
        String::new()
    } else {
        format!(
            " (over two or more behaviours of the p50 of {}: see the note)",
            which.join(" and ")
        )
    }
}

/// "note: system out-of-place: 2 behaviours of p50: …" for every cell whose processes
/// fall into groups.
pub fn behaviour_notes(rows: &[SummaryRow]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let who = format!("note: {} {}", r.allocator_spec, r.variant);
            crate::analysis::modes::note(&who, &r.behaviours, "processes", "process")
        })
        .collect()
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
    fn knob_sets_are_compared_with_the_defaults_in_every_variant() {
        let knobbed = |variant, p50, faults| {
            let mut r = row("system", variant, p50, faults, Some(0.0));
            r.allocator_spec = "system:trim_threshold=1G".into();
            r
        };
        let rows = vec![
            row("system", "in-place", 455_000, 0.0, Some(0.0)),
            row("system", "out-of-place", 9_000_000, 3906.0, Some(3.0)),
            knobbed("in-place", 4_700_000, 1954.0),
            // Within 1.5x of the defaults: left out.
            knobbed("out-of-place", 10_000_000, 3906.0),
        ];
        let lines = knob_findings(&rows, None, 0.02);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with(
                "system:trim_threshold=1G: in-place is 10.3x slower than with system's defaults (p50 4.70 ms vs 455 µs)"
            ),
            "{lines:?}"
        );
        assert!(lines[0].contains("+1,954 minor faults"), "{lines:?}");
        assert!(
            knob_findings(&rows[..2], None, 0.02).is_empty(),
            "defaults alone: nothing"
        );
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
