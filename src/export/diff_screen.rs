//! diff's console: the answer first in the reader's width (how many cells changed, each
//! one called changed with its interval), the table that fits, the environment's changes
//! cut to a line each; and a cell's change in words, which the full table uses too.

use crate::analysis::answer::phrase as describe;
use crate::analysis::diff::{CellChange, Diff};
use crate::analysis::stats::{Comparison, Interval, Verdict};
use crate::export::table::{render_table, TableRow};
use crate::fmt::{fmt_ns, signed};
use crate::model::metric::Changes;

/// A cell's change in words: "1.09x slower [1.04x, 1.14x]", or its note without a ratio.
pub(crate) fn change_words(c: &CellChange, level: f64) -> String {
    let Some(ratio) = c.ratio else {
        return c.note.clone().unwrap_or_else(|| "n/a".into());
    };
    let interval = match (c.ratio_ci_low, c.ratio_ci_high, c.ratio_ci_coverage) {
        (Some(low), Some(high), Some(coverage)) => Some(Interval {
            low,
            high,
            coverage,
        }),
        _ => None,
    };
    describe(&Comparison {
        ratio,
        interval,
        pairs: 0,
        verdict: c.verdict,
        level,
        unpaired: true,
    })
}

/// The words of each cell's name that every cell shares (the workload, a size, a thread
/// count), which the compact table leaves out.
fn shared_words(d: &Diff) -> Vec<String> {
    let mut cells = d.cells.iter().map(|c| c.cell.split_whitespace());
    let Some(first) = cells.next() else {
        return Vec::new();
    };
    let names: Vec<Vec<&str>> = d
        .cells
        .iter()
        .map(|c| c.cell.split_whitespace().collect())
        .collect();
    first
        .filter(|w| names.iter().all(|n| n.contains(w)))
        .map(str::to_string)
        .collect()
}

/// diff's first screen in `width` columns: what must be known first (an incomplete side,
/// a changed command or allocator version), the answer (how many cells changed, and each
/// one called slower or faster with its interval), what to do about it, then a table
/// that fits (the cells' names without the words they all share), then the environment's
/// changes, each cut to a line or two (`--format json` has them whole).
pub(crate) fn answer_screen(
    d: &Diff,
    notes: &[String],
    summary: &str,
    tail: &[String],
    width: usize,
) -> String {
    use crate::fmt::wrap;
    let mut s = String::new();
    let (env, first): (Vec<&String>, Vec<&String>) =
        notes.iter().partition(|n| n.starts_with("environment: "));
    for n in &first {
        s.push_str(&wrap(n, width, "", "  "));
    }
    s.push_str(&wrap(summary, width, "", "  "));
    for c in &d.cells {
        if matches!(c.verdict, Some(Verdict::Slower | Verdict::Faster)) {
            s.push_str(&wrap(
                &format!("{}: {}", c.cell, change_words(c, d.level)),
                width,
                "  ",
                "    ",
            ));
        }
    }
    for t in tail {
        s.push_str(&wrap(t, width, "", "  "));
    }
    let shared = shared_words(d);
    s.push('\n');
    if !shared.is_empty() {
        s.push_str(&wrap(
            &format!("every cell: {}", shared.join(" ")),
            width,
            "",
            "  ",
        ));
    }
    let ns = |v: Option<f64>| v.map_or("n/a".into(), fmt_ns);
    let delta = |v: Option<f64>| v.map_or("n/a".into(), signed);
    let rows: Vec<TableRow> = d
        .cells
        .iter()
        .map(|c| TableRow {
            cells: vec![
                c.cell
                    .split_whitespace()
                    .filter(|w| !shared.iter().any(|x| x == w))
                    .collect::<Vec<_>>()
                    .join(" "),
                ns(c.base_p50_ns),
                ns(c.new_p50_ns),
                compact_change(c),
            ]
            .into_iter()
            .chain(c.changes.iter().map(|(_, v)| delta(v)))
            .collect(),
            failure: None,
        })
        .collect();
    // The counts per iteration, like every count of the screen; short enough that a
    // cell's row fits 100 columns.
    let headers = change_headers("new/base [interval]", "", &[]);
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    s.push_str(&render_table(&h, 1, &rows));
    if !env.is_empty() {
        s.push('\n');
    }
    // An environment change can be a whole JSON document: one line of it here.
    let mut cut = false;
    for e in env {
        if e.chars().count() > width {
            cut = true;
            s.push_str(&e.chars().take(width - 1).collect::<String>());
            s.push_str("…\n");
        } else {
            s.push_str(e);
            s.push('\n');
        }
    }
    if cut {
        s.push_str("(… cut at the screen's width: --verbose or --format json has them whole)\n");
    }
    s.push_str(&wrap(
        "the cells' whole names, Δ rss_end and each note in full: --verbose; every figure: --format json",
        width,
        "",
        "  ",
    ));
    s
}

/// A cell's change in a narrow column: "1.09x [1.04x, 1.14x] slower", "0.95x [0.89x,
/// 1.01x]" (no significant difference), the ratio alone without an interval.
/// A diff table's header: the cell, its two p50s, the change (`change`), then "Δ
/// <short><per>" for each count a diff gives (the registry's spread entries), then `tail`.
pub fn change_headers(change: &str, per: &str, tail: &[&str]) -> Vec<String> {
    ["cell", "base p50", "new p50", change]
        .into_iter()
        .map(String::from)
        .chain(
            Changes::default()
                .iter()
                .map(|(m, _)| format!("Δ {}{per}", m.short)),
        )
        .chain(tail.iter().map(|t| t.to_string()))
        .collect()
}

fn compact_change(c: &CellChange) -> String {
    let Some(ratio) = c.ratio else {
        return "n/a".into();
    };
    let word = match c.verdict {
        Some(Verdict::Slower) => " slower",
        Some(Verdict::Faster) => " faster",
        Some(Verdict::Undecided) => " undecided",
        _ => "",
    };
    match (c.ratio_ci_low, c.ratio_ci_high) {
        (Some(lo), Some(hi)) => format!("{ratio:.2}x [{lo:.2}x, {hi:.2}x]{word}"),
        _ => format!("{ratio:.2}x (no interval)"),
    }
}
