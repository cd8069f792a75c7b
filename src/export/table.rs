//! Tables for people: the aligned plain-text table and the GitHub Markdown table of
//! summary rows, and the renderers other tables (exec, tune) share.

use crate::fmt::{fmt_count, fmt_ns, group_thousands, human_bytes};
use crate::model::metric::{ALLOCS, COUNTS, MEMORY_SYSCALLS, MINOR_FAULTS};
use crate::model::record::Outcome;
use crate::model::summary::SummaryRow;
use std::fmt::Write as _;

const NA: &str = "n/a";

/// The columns of the human table and the Markdown table.
/// A column: header and how to render a row's cell.
type Column = (String, Box<dyn Fn(&SummaryRow) -> String>);

/// A column of `head` whose cells `cell` renders.
fn col(head: impl Into<String>, cell: impl Fn(&SummaryRow) -> String + 'static) -> Column {
    (head.into(), Box::new(cell))
}

/// The columns shown for `rows`: workload, size and threads only where they vary; all
/// the counters when `wide`, else the faults and the memory syscalls as one sum.
fn display_columns(rows: &[SummaryRow], wide: bool) -> Vec<Column> {
    fn opt_count(v: Option<f64>) -> String {
        v.map_or(NA.into(), fmt_count)
    }
    fn varies<T: PartialEq>(rows: &[SummaryRow], f: impl Fn(&SummaryRow) -> T) -> bool {
        rows.first()
            .is_some_and(|first| rows.iter().any(|r| f(r) != f(first)))
    }
    let mut cols: Vec<Column> = Vec::new();
    if varies(rows, |r| r.workload) {
        cols.push(col("workload", |r| r.workload.to_string()));
    }
    if varies(rows, |r| r.size) {
        cols.push(col("size", |r| group_thousands(r.size as i64)));
    }
    if varies(rows, |r| r.threads) {
        cols.push(col("threads", |r| r.threads.to_string()));
    }
    cols.extend([
        col("allocator", |r| r.allocator_spec.clone()),
        col("variant", |r| r.variant.to_string()),
    ]);
    let replicated = rows.iter().any(|r| r.processes.unwrap_or(1) > 1);
    if replicated {
        cols.push(col("procs", |r| {
            r.processes.map_or(NA.into(), |n| n.to_string())
        }));
    }
    if wide {
        cols.push(col("iters", |r| {
            r.iterations
                .map_or(NA.into(), |n| group_thousands(n as i64))
        }));
    }
    cols.push(col("p50", |r| {
        r.p50_ns.map_or(NA.into(), |v| fmt_ns(v as f64))
    }));
    if replicated {
        // The 95 % interval of the median over processes, as ± the larger side.
        cols.push(col("±p50", |r| {
            match (r.p50_ns, r.p50_ci_low_ns, r.p50_ci_high_ns) {
                (Some(c), Some(lo), Some(hi)) if c > 0 => {
                    let half = hi.saturating_sub(c).max(c.saturating_sub(lo));
                    format!("±{:.1}%", 100.0 * half as f64 / c as f64)
                }
                _ => NA.into(),
            }
        }));
    }
    if !wide {
        cols.extend([
            col("faults/it", |r| opt_count(r.per_iter[MINOR_FAULTS])),
            // Unavailable when any of the five is: a partial sum would be a false one.
            col("mem calls/it", |r| opt_count(r.per_iter[MEMORY_SYSCALLS])),
            col("rss_end", |r| {
                r.rss_end_bytes.map_or(NA.into(), human_bytes)
            }),
        ]);
        return cols;
    }
    cols.push(col("p99", |r| {
        r.p99_ns.map_or(NA.into(), |v| fmt_ns(v as f64))
    }));
    for m in COUNTS.into_iter().chain([ALLOCS]) {
        let head = format!("{}/it", m.key.trim_end_matches("_per_iter"));
        cols.push(col(head, move |r| opt_count(r.per_iter[m])));
    }
    cols.push(col("rss_end", |r| {
        r.rss_end_bytes.map_or(NA.into(), human_bytes)
    }));
    cols
}

/// How many leading columns are names (left-aligned) rather than numbers.
fn name_columns(cols: &[Column]) -> usize {
    cols.iter()
        .position(|(h, _)| *h == "variant")
        .map_or(0, |i| i + 1)
}

/// A table row for [`render_table`] / [`render_markdown`]: every cell, or — for a failed
/// row — the name cells and the cause.
pub struct TableRow {
    pub cells: Vec<String>,
    pub failure: Option<String>,
}

/// Aligned plain-text table: the first `names` columns are names (left-aligned), the rest
/// numbers (right-aligned); a failed row shows its names and then its cause.
pub fn render_table(headers: &[&str], names: usize, rows: &[TableRow]) -> String {
    render_table_within(headers, names, rows, usize::MAX)
}

/// [`render_table`] within `width` columns where one space between the columns instead
/// of two makes it fit (the figures are never cut).
pub fn render_table_within(
    headers: &[&str],
    names: usize,
    rows: &[TableRow],
    width: usize,
) -> String {
    let shown = |r: &TableRow| -> usize {
        if r.failure.is_some() {
            names.min(r.cells.len())
        } else {
            r.cells.len()
        }
    };
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(&r.cells[..shown(r)]) {
            *w = (*w).max(c.chars().count());
        }
    }
    let at_two = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    let gap = if at_two > width { " " } else { "  " };
    let line = |items: &[&str]| {
        let mut s = String::new();
        for (i, (item, w)) in items.iter().zip(&widths).enumerate() {
            let pad = " ".repeat(w.saturating_sub(item.chars().count()));
            if i < names {
                s.push_str(item);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(item);
            }
            s.push_str(gap);
        }
        s
    };
    let mut out = line(headers).trim_end().to_string();
    out.push('\n');
    for r in rows {
        let cells: Vec<&str> = r.cells[..shown(r)].iter().map(String::as_str).collect();
        let mut l = line(&cells);
        if let Some(why) = &r.failure {
            let _ = write!(l, "FAILED: {why}");
        }
        out.push_str(l.trim_end());
        out.push('\n');
    }
    out
}

/// GitHub-flavoured Markdown table with the same layout as [`render_table`].
pub fn render_markdown(headers: &[&str], names: usize, rows: &[TableRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let align: Vec<&str> = (0..headers.len())
        .map(|i| if i < names { ":--" } else { "--:" })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    for r in rows {
        let mut cells: Vec<String> = match &r.failure {
            None => r.cells.clone(),
            Some(why) => {
                let mut c: Vec<String> = r.cells[..names.min(r.cells.len())].to_vec();
                c.push(format!("FAILED: {why}"));
                c.resize(headers.len(), String::new());
                c
            }
        };
        for c in &mut cells {
            *c = c.replace('|', "\\|");
        }
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

fn summary_table_rows(rows: &[SummaryRow], cols: &[Column]) -> Vec<TableRow> {
    rows.iter()
        .map(|r| TableRow {
            cells: cols.iter().map(|(_, f)| f(r)).collect(),
            failure: (!r.status.is_ok())
                .then(|| r.error.clone().unwrap_or_else(|| "unknown".into())),
        })
        .collect()
}

/// Aligned plain-text table, rows in run order; a failed run gets one line with its cause.
pub fn to_table(rows: &[SummaryRow]) -> String {
    table_of(rows, true, usize::MAX)
}

/// The table that fits a screen: allocator, variant, p50 and its interval, faults and
/// memory syscalls per iteration, RSS at the end (the others: [`to_table`]).
pub fn to_compact_table(rows: &[SummaryRow]) -> String {
    table_of(rows, false, usize::MAX)
}

/// [`to_compact_table`] for a screen of `width` columns: where two spaces between the
/// columns would run past it, one.
pub fn to_compact_table_within(rows: &[SummaryRow], width: usize) -> String {
    table_of(rows, false, width)
}

fn table_of(rows: &[SummaryRow], wide: bool, width: usize) -> String {
    let cols = display_columns(rows, wide);
    let headers: Vec<&str> = cols.iter().map(|(h, _)| h.as_str()).collect();
    render_table_within(
        &headers,
        name_columns(&cols),
        &summary_table_rows(rows, &cols),
        width,
    )
}

/// tune's table: one row per knob set (`rows`' allocator_spec as the set's name), the
/// columns that fit a screen, or all of them when `wide`; no variant column (tune
/// measures one).
pub fn to_sets_table(rows: &[SummaryRow], wide: bool) -> String {
    let mut cols = display_columns(rows, wide);
    cols.retain(|(h, _)| h != "variant");
    let names = cols
        .iter()
        .position(|(h, _)| h == "allocator")
        .map_or(0, |i| i + 1);
    let headers: Vec<&str> = cols
        .iter()
        .map(|(h, _)| if h == "allocator" { "set" } else { h.as_str() })
        .collect();
    render_table(&headers, names, &summary_table_rows(rows, &cols))
}

/// GitHub-flavoured Markdown table with the same columns as [`to_table`].
pub fn to_markdown(rows: &[SummaryRow]) -> String {
    let cols = display_columns(rows, true);
    let headers: Vec<&str> = cols.iter().map(|(h, _)| h.as_str()).collect();
    render_markdown(
        &headers,
        name_columns(&cols),
        &summary_table_rows(rows, &cols),
    )
}

/// The one-screen human view: context, how it was measured (`method`), table, the
/// explanation `lines`, notes.
pub fn compare_screen(
    outcomes: &[Outcome],
    rows: &[SummaryRow],
    method: &str,
    lines: &[String],
    verbose: bool,
) -> String {
    let mut s = String::new();
    if let Some(first) = outcomes.first() {
        let spec = &first.spec;
        s.push_str(&format!(
            "{} · {} · seed {}\n",
            spec.workload,
            spec.workload.size_words(spec.size),
            spec.seed
        ));
    }
    let oks: Vec<_> = outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    if let Some(r) = oks.first() {
        let mut versions: Vec<String> = Vec::new();
        for r in &oks {
            if !versions.contains(&r.env.allocator_version) {
                versions.push(r.env.allocator_version.clone());
            }
        }
        let e = &r.env;
        s.push_str(&format!(
            "{} · THP {} · {} · {} · {} target-cpu={} ({})\n",
            versions.join(" · "),
            e.thp_enabled,
            e.kernel,
            e.cpu_model,
            e.codegen.profile,
            e.codegen.target_cpu,
            e.codegen.simd_summary()
        ));
        s.push_str(&format!(
            "latency per iteration, measured for at least {} s and {} iterations; harness overhead {:.0} ns/sample (clock pair {:.0} ns)\n",
            r.budget.min_time_ns as f64 / 1e9,
            r.budget.min_iters,
            r.overhead.harness_overhead_ns_per_sample,
            r.overhead.timer_overhead_ns
        ));
        if !method.is_empty() {
            s.push_str(method);
            s.push('\n');
        }
        s.push('\n');
    }
    s.push_str(&to_table(rows));
    if !lines.is_empty() {
        s.push('\n');
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
    }
    if verbose {
        s.push_str("\nallocator statistics at the end of the measured phase (bytes) and knobs as the allocator reports them:\n");
        let mut shown = std::collections::BTreeSet::new();
        for o in outcomes {
            let Ok(r) = &o.result else { continue };
            // One process per cell: the others hold the same kind of figures.
            if !shown.insert(o.spec.to_string()) {
                continue;
            }
            let stats: Vec<String> = r
                .allocator_stats
                .iter()
                .map(|(k, v)| format!("{k} {}", fmt_count(*v as f64)))
                .collect();
            let knobs: Vec<String> = r
                .knobs_effective
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            s.push_str(&format!(
                "  {} {}: {}{}{}\n",
                o.spec.allocator_label(),
                o.spec.variant,
                if stats.is_empty() {
                    "no statistics".to_string()
                } else {
                    stats.join(", ")
                },
                if knobs.is_empty() {
                    String::new()
                } else {
                    format!("; knobs {}", knobs.join(", "))
                },
                match r.thp_disabled {
                    Some(true) => "; THP disabled",
                    _ => "",
                }
            ));
        }
    }
    let notes = crate::analysis::cells::unavailable_notes(outcomes);
    if !notes.is_empty() {
        s.push('\n');
        for n in notes {
            s.push_str(&format!("note: {n}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::csv::to_csv;
    use crate::model::record::{Outcome, RunFailure};

    #[test]
    fn a_table_too_wide_for_the_screen_closes_its_gaps_and_keeps_every_figure() {
        let headers = [
            "allocator",
            "variant",
            "procs",
            "p50",
            "±p50",
            "faults/it",
            "mem calls/it",
            "rss_end",
        ];
        let cells = [
            "jemalloc",
            "out-of-place",
            "3",
            "24.6 ms",
            "±25.0%",
            "3,908",
            "2.00",
            "6.5 MiB",
        ];
        let rows = [TableRow {
            cells: cells.map(String::from).to_vec(),
            failure: None,
        }];
        let wide = render_table(&headers, 2, &rows);
        assert!(wide.lines().all(|l| l.chars().count() > 80), "{wide}");
        let narrow = render_table_within(&headers, 2, &rows, 80);
        for l in narrow.lines() {
            assert!(l.chars().count() <= 80, "{l}");
        }
        let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&narrow), words(&wide));
        // Where two spaces fit, two spaces.
        assert_eq!(render_table_within(&headers, 2, &rows, 100), wide);
    }
    use crate::model::run::RunSpec;
    use crate::model::spec::{Allocator, Variant, Workload};
    use crate::model::summary::sample as row;

    #[test]
    fn csv_parses_back_with_nulls_as_empty_cells() {
        let rows = vec![
            row("system", "in-place", 2_000_000, 0.0, Some(0.0)),
            row("jemalloc", "reuse", 1_000_000, 1.5, None),
        ];
        let csv = to_csv(&rows);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        let header: Vec<&str> = lines[0].split(',').collect();
        let brk = header.iter().position(|h| *h == "brk_per_iter").unwrap();
        let p50 = header.iter().position(|h| *h == "p50_ns").unwrap();
        for (i, line) in lines[1..].iter().enumerate() {
            let cells: Vec<&str> = line.split(',').collect();
            assert_eq!(cells.len(), header.len());
            assert_eq!(cells[p50].parse::<u64>().unwrap(), rows[i].p50_ns.unwrap());
        }
        assert_eq!(lines[1].split(',').nth(brk), Some("0.0"));
        assert_eq!(lines[2].split(',').nth(brk), Some(""));
        assert_eq!(
            to_csv(&[]).lines().next(),
            Some(lines[0]),
            "no rows: still the header"
        );
    }

    #[test]
    fn table_columns_line_up_and_failures_say_why() {
        let mut rows = vec![
            row("system", "in-place", 2_000_000, 0.0, Some(0.0)),
            row("mimalloc", "out-of-place", 123_456_789, 4096.0, Some(3.0)),
        ];
        let failed = Outcome {
            spec: RunSpec {
                allocator: Allocator::Jemalloc,
                workload: Workload::Scale,
                variant: Variant::Reuse,
                size: 1000,
                threads: 1,
                seed: 1,
                knobs: Vec::new(),
                thp: Default::default(),
                library: None,
            },
            result: Err(RunFailure {
                cause: "killed by signal 9 (SIGKILL)".into(),
            }),
        };
        rows.push(SummaryRow::from_outcome(&failed));
        let t = to_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0].chars().count(), lines[1].chars().count());
        assert_eq!(lines[1].chars().count(), lines[2].chars().count());
        assert!(
            lines[2].contains("123 ms") && lines[2].contains("4,096"),
            "{t}"
        );
        assert!(
            lines[1].contains("n/a"),
            "allocs unavailable must show n/a: {t}"
        );
        assert!(lines[3].starts_with("jemalloc   reuse"), "{t}");
        assert!(lines[3].contains("FAILED: killed by signal 9"), "{t}");
        let md = to_markdown(&rows);
        assert_eq!(md.lines().count(), 5);
        assert!(md.lines().all(|l| l.starts_with('|') && l.ends_with('|')));
    }
}
