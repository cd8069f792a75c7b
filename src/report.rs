//! Turning outcomes into what people and machines read: one flat summary row per run
//! (JSON and CSV use its field names), an aligned table, a Markdown table, and the
//! out-of-place/in-place explanation lines computed from the data.

use crate::driver::{human_bytes, Outcome};
use crate::record::RunRecord;
use crate::spec::{Allocator, Variant, Workload};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One run, flat, with units in the names; `null` where a value is unavailable or the
/// run failed (`status` and `error` say which).
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRow {
    /// Identifies the run's files in a results folder (`runs/<run_id>.json`, …).
    pub run_id: String,
    pub allocator: Allocator,
    /// The allocator with its knobs and THP mode, e.g. `system:top_pad=64M thp=never`.
    pub allocator_spec: String,
    pub workload: Workload,
    pub variant: Variant,
    pub size: u64,
    pub threads: u32,
    pub seed: u64,
    pub status: &'static str,
    pub error: Option<String>,
    pub iterations: Option<u64>,
    pub min_ns: Option<u64>,
    pub p50_ns: Option<u64>,
    pub p90_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub mean_ns: Option<f64>,
    /// Inputs read plus result written per iteration, over the p50 time (bytes/ns).
    pub throughput_gb_per_s: Option<f64>,
    pub minflt_per_iter: Option<f64>,
    pub majflt_per_iter: Option<f64>,
    pub nvcsw_per_iter: Option<f64>,
    pub nivcsw_per_iter: Option<f64>,
    pub utime_ns_per_iter: Option<f64>,
    pub stime_ns_per_iter: Option<f64>,
    pub brk_per_iter: Option<f64>,
    pub mmap_per_iter: Option<f64>,
    pub munmap_per_iter: Option<f64>,
    pub madvise_per_iter: Option<f64>,
    pub mremap_per_iter: Option<f64>,
    pub syscalls_per_iter: Option<f64>,
    /// brk + mmap + munmap + madvise + mremap per iteration.
    pub memory_syscalls_per_iter: Option<f64>,
    /// Which method counted the syscalls: `perf` or `ptrace`.
    pub syscall_counter: Option<String>,
    pub allocs_per_iter: Option<f64>,
    pub alloc_bytes_per_iter: Option<f64>,
    pub rss_start_bytes: Option<u64>,
    pub rss_end_bytes: Option<u64>,
    pub rss_peak_bytes: Option<u64>,
    pub checksum: Option<String>,
    pub timer_overhead_ns: Option<f64>,
    pub harness_overhead_ns_per_sample: Option<f64>,
    pub allocator_version: Option<String>,
}

impl SummaryRow {
    /// A row with every value null, for the field names.
    fn empty() -> Self {
        SummaryRow::from_outcome(&Outcome {
            spec: crate::spec::RunSpec {
                allocator: Allocator::System,
                workload: Workload::Scale,
                variant: Variant::InPlace,
                size: 0,
                threads: 0,
                seed: 0,
                knobs: Vec::new(),
                thp: Default::default(),
            },
            result: Err(crate::driver::RunFailure {
                cause: String::new(),
            }),
        })
    }

    pub fn from_outcome(o: &Outcome) -> Self {
        let s = &o.spec;
        let r = o.result.as_ref().ok();
        let f = |get: fn(&RunRecord) -> Option<f64>| r.and_then(get);
        let u = |get: fn(&RunRecord) -> Option<u64>| r.and_then(get);
        SummaryRow {
            run_id: crate::experiment::run_id(s),
            allocator: s.allocator,
            allocator_spec: s.allocator_label(),
            workload: s.workload,
            variant: s.variant,
            size: s.size,
            threads: s.threads,
            seed: s.seed,
            status: if r.is_some() { "ok" } else { "failed" },
            error: o.result.as_ref().err().map(|e| e.cause.clone()),
            iterations: u(|r| Some(r.iterations)),
            min_ns: u(|r| Some(r.min_ns)),
            p50_ns: u(|r| Some(r.p50_ns)),
            p90_ns: u(|r| Some(r.p90_ns)),
            p99_ns: u(|r| Some(r.p99_ns)),
            p999_ns: u(|r| Some(r.p999_ns)),
            max_ns: u(|r| Some(r.max_ns)),
            mean_ns: f(|r| Some(r.mean_ns)),
            throughput_gb_per_s: r.map(|r| {
                crate::workload::useful_bytes(r.workload, r.size) as f64 * f64::from(r.threads)
                    / r.p50_ns.max(1) as f64
            }),
            minflt_per_iter: f(|r| Some(r.minflt_per_iter)),
            majflt_per_iter: f(|r| Some(r.majflt_per_iter)),
            nvcsw_per_iter: f(|r| Some(r.nvcsw_per_iter)),
            nivcsw_per_iter: f(|r| Some(r.nivcsw_per_iter)),
            utime_ns_per_iter: f(|r| Some(r.utime_ns_per_iter)),
            stime_ns_per_iter: f(|r| Some(r.stime_ns_per_iter)),
            brk_per_iter: f(|r| r.brk_per_iter),
            mmap_per_iter: f(|r| r.mmap_per_iter),
            munmap_per_iter: f(|r| r.munmap_per_iter),
            madvise_per_iter: f(|r| r.madvise_per_iter),
            mremap_per_iter: f(|r| r.mremap_per_iter),
            syscalls_per_iter: f(|r| r.syscalls_per_iter),
            memory_syscalls_per_iter: f(|r| r.memory_syscalls_per_iter()),
            syscall_counter: r.and_then(|r| r.syscall_counter.clone()),
            allocs_per_iter: f(|r| r.allocs_per_iter),
            alloc_bytes_per_iter: f(|r| r.alloc_bytes_per_iter),
            rss_start_bytes: u(|r| r.rss_start_bytes),
            rss_end_bytes: u(|r| r.rss_end_bytes),
            rss_peak_bytes: u(|r| Some(r.rss_peak_bytes)),
            checksum: r.map(|r| r.checksum.clone()),
            timer_overhead_ns: f(|r| Some(r.overhead.timer_overhead_ns)),
            harness_overhead_ns_per_sample: f(|r| Some(r.overhead.harness_overhead_ns_per_sample)),
            allocator_version: r.map(|r| r.env.allocator_version.clone()),
        }
    }
}

/// A JSON array of summary rows.
pub fn to_json(rows: &[SummaryRow]) -> String {
    serde_json::to_string_pretty(rows).expect("summary rows always serialize")
}

fn csv_cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) if s.contains([',', '"', '\n']) => {
            format!("\"{}\"", s.replace('"', "\"\""))
        }
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// CSV with a header of the summary field names; empty cells where JSON has null.
pub fn to_csv(rows: &[SummaryRow]) -> String {
    csv_of(rows, &SummaryRow::empty())
}

/// CSV of serializable rows: the header is `empty`'s field names (so that it is the same
/// whatever the rows hold), the cells the rows' values, empty where JSON has null.
pub fn csv_of<T: Serialize>(rows: &[T], empty: &T) -> String {
    let mut out = String::new();
    let objects: Vec<serde_json::Map<String, serde_json::Value>> = rows
        .iter()
        .filter_map(|r| match serde_json::to_value(r) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect();
    let header: Vec<String> = match serde_json::to_value(empty) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    };
    out.push_str(&header.join(","));
    out.push('\n');
    for obj in &objects {
        let cells: Vec<String> = header
            .iter()
            .map(|k| obj.get(k).map_or(String::new(), csv_cell))
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// The median of `v` (mean of the middle two for an even count), None for no values.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// "1.92 ms" — three significant figures, unit chosen by magnitude.
pub fn fmt_ns(ns: f64) -> String {
    if ns == 0.0 {
        return "0".into();
    }
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// A per-iteration count: "0", "0.02", "3.00", "41.5", "3,906".
pub fn fmt_count(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() < 0.01 {
        // Two significant digits: 0.0012, not a misleading 0.00.
        let decimals = (1 - v.abs().log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    } else if v.abs() < 10.0 {
        format!("{v:.2}")
    } else if v.abs() < 100.0 {
        format!("{v:.1}")
    } else {
        group_thousands(v.round() as i64)
    }
}

fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

const NA: &str = "n/a";

/// The columns of the human table and the Markdown table.
/// A column: header and how to render a row's cell.
type Column = (&'static str, fn(&SummaryRow) -> String);

/// The columns shown for `rows`: workload, size and threads only where they vary.
fn display_columns(rows: &[SummaryRow]) -> Vec<Column> {
    fn opt_count(v: Option<f64>) -> String {
        v.map_or(NA.into(), fmt_count)
    }
    fn varies<T: PartialEq>(rows: &[SummaryRow], f: impl Fn(&SummaryRow) -> T) -> bool {
        rows.first()
            .is_some_and(|first| rows.iter().any(|r| f(r) != f(first)))
    }
    let mut cols: Vec<Column> = Vec::new();
    if varies(rows, |r| r.workload) {
        cols.push(("workload", |r| r.workload.to_string()));
    }
    if varies(rows, |r| r.size) {
        cols.push(("size", |r| group_thousands(r.size as i64)));
    }
    if varies(rows, |r| r.threads) {
        cols.push(("threads", |r| r.threads.to_string()));
    }
    cols.extend::<[Column; 13]>([
        ("allocator", |r| r.allocator_spec.clone()),
        ("variant", |r| r.variant.to_string()),
        ("iters", |r| {
            r.iterations
                .map_or(NA.into(), |n| group_thousands(n as i64))
        }),
        ("p50", |r| r.p50_ns.map_or(NA.into(), |v| fmt_ns(v as f64))),
        ("p99", |r| r.p99_ns.map_or(NA.into(), |v| fmt_ns(v as f64))),
        ("minflt/it", |r| opt_count(r.minflt_per_iter)),
        ("majflt/it", |r| opt_count(r.majflt_per_iter)),
        ("brk/it", |r| opt_count(r.brk_per_iter)),
        ("mmap/it", |r| opt_count(r.mmap_per_iter)),
        ("munmap/it", |r| opt_count(r.munmap_per_iter)),
        ("madvise/it", |r| opt_count(r.madvise_per_iter)),
        ("allocs/it", |r| opt_count(r.allocs_per_iter)),
        ("rss_end", |r| {
            r.rss_end_bytes.map_or(NA.into(), human_bytes)
        }),
    ]);
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
            s.push_str("  ");
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
            failure: (r.status != "ok")
                .then(|| r.error.clone().unwrap_or_else(|| "unknown".into())),
        })
        .collect()
}

/// Aligned plain-text table, rows in run order; a failed run gets one line with its cause.
pub fn to_table(rows: &[SummaryRow]) -> String {
    let cols = display_columns(rows);
    let headers: Vec<&str> = cols.iter().map(|(h, _)| *h).collect();
    render_table(
        &headers,
        name_columns(&cols),
        &summary_table_rows(rows, &cols),
    )
}

/// GitHub-flavoured Markdown table with the same columns as [`to_table`].
pub fn to_markdown(rows: &[SummaryRow]) -> String {
    let cols = display_columns(rows);
    let headers: Vec<&str> = cols.iter().map(|(h, _)| *h).collect();
    render_markdown(
        &headers,
        name_columns(&cols),
        &summary_table_rows(rows, &cols),
    )
}

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

fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", fmt_count(v))
    } else {
        fmt_count(v)
    }
}

/// One line per allocator: how much slower out-of-place is than in-place, and the
/// counter differences that go with it.
pub fn explanations(rows: &[SummaryRow]) -> Vec<String> {
    let mut by_alloc: BTreeMap<(Allocator, &str, u64), BTreeMap<Variant, &SummaryRow>> =
        BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == "ok") {
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
            let speed = if ratio >= 1.0 {
                format!("{ratio:.2}x slower")
            } else {
                format!("{:.2}x faster", 1.0 / ratio)
            };
            let mut s = format!(
                "{other} is {speed} than in-place (p50 {} vs {})",
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
    use crate::driver::RunFailure;
    use crate::spec::RunSpec;

    fn row(alloc: &str, variant: &str, p50: u64, minflt: f64, brk: Option<f64>) -> SummaryRow {
        let o = Outcome {
            spec: RunSpec {
                allocator: alloc.parse().unwrap(),
                workload: Workload::Scale,
                variant: variant.parse().unwrap(),
                size: 1000,
                threads: 1,
                seed: 1,
                knobs: Vec::new(),
                thp: Default::default(),
            },
            result: Err(RunFailure { cause: "x".into() }),
        };
        let mut r = SummaryRow::from_outcome(&o);
        r.status = "ok";
        r.error = None;
        r.iterations = Some(100);
        r.p50_ns = Some(p50);
        r.p99_ns = Some(p50 * 2);
        r.minflt_per_iter = Some(minflt);
        r.brk_per_iter = brk;
        r
    }

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

    #[test]
    fn number_formats() {
        assert_eq!(fmt_ns(55.0), "55.0 ns");
        assert_eq!(fmt_ns(0.0), "0");
        assert_eq!(fmt_ns(1_920_000.0), "1.92 ms");
        assert_eq!(fmt_ns(123_456_789.0), "123 ms");
        assert_eq!(fmt_count(0.0), "0");
        assert_eq!(fmt_count(3.0), "3.00");
        assert_eq!(fmt_count(0.0012), "0.0012");
        assert_eq!(fmt_count(0.05), "0.05");
        assert_eq!(fmt_count(3906.4), "3,906");
        assert_eq!(fmt_count(-1234567.0), "-1,234,567");
    }
}
