//! `alloclab exec` results: one summary row per allocator (medians over its runs), as a
//! table, Markdown, CSV or JSON, and `--out DIR` with the same files as the rest of the
//! lab (summary.csv, HdrHistogram `.us.csv` / `.us.hgrm` of the run times, env.json) plus
//! `exec.json` with every run and `REPORT.md`.

pub use crate::analysis::command::{paired, rows, ExecRow};
use crate::analysis::stats::{coverage, level_text};
use crate::export::folder::Folder;
use crate::export::table::{render_markdown, render_table, TableRow};
use crate::fmt::{fmt_count, fmt_ns};
use crate::model::command::{AllocatorRuns, ExecRecord};
use crate::model::metric::{Metric, Unit, RUN_METRICS, RUN_PEAK_RSS};
use hdrhistogram::Histogram;

/// Allocators whose runs spread widely (max − min more than a fifth of the median over
/// three runs or more): a median with a small MAD would hide two behaviours.
pub fn spread_notes(rows: &[ExecRow]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.runs >= 3 && !wall_behaviours(r))
        .filter_map(|r| {
            let (lo, hi, m) = (r.wall_min_ms?, r.wall_max_ms?, r.wall_median_ms?);
            (hi - lo > 0.2 * m).then(|| {
                format!(
                    "{}'s runs spread from {} to {} ({:.0} % of the median): more than one behaviour may hide behind its median; each run is in exec.json",
                    r.allocator,
                    fmt_ns(lo * 1e6),
                    fmt_ns(hi * 1e6),
                    100.0 * (hi - lo) / m
                )
            })
        })
        .collect()
}

/// Whether `r`'s runs took two or more wall times.
fn wall_behaviours(r: &ExecRow) -> bool {
    r.behaviours.iter().any(|b| b.figure == "wall time")
}

/// One line per allocator whose runs show two or more behaviours of a figure.
pub fn behaviour_notes(rows: &[ExecRow]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            crate::analysis::modes::note(&r.allocator, &r.behaviours, "runs", "run")
                .map(|n| format!("{n} (each run is in exec.json)"))
        })
        .collect()
}

const NA: &str = "n/a";

type Column = (String, Box<dyn Fn(&ExecRow) -> String>);

/// A column of its own: its header and how a row's cell is written.
fn column(h: &str, f: fn(&ExecRow) -> String) -> Column {
    (h.to_string(), Box::new(f))
}

/// The column of a per-run registry entry: its short name, and its median in the entry's
/// unit (a count as [`count`] writes it).
fn entry(m: Metric) -> Column {
    (
        m.short.to_string(),
        Box::new(move |r: &ExecRow| match (m.unit, r.per_run[m]) {
            _ if m.syscall && perturbed(r) => PERTURBED.into(),
            (Unit::Count, v) => count(v),
            (_, v) => v.map_or(NA.into(), |v| m.show(v)),
        }),
    )
}

/// What a memory-syscall cell says where the one traced run did otherwise than the
/// untraced runs: its counts are in the note, not the allocator's column.
const PERTURBED: &str = "perturbed";

/// Whether `r`'s traced run was perturbed by tracing.
fn perturbed(r: &ExecRow) -> bool {
    r.traced_perturbed
}

/// A median count: whole numbers as such ("3", "15,342"); the half a median of an even
/// number of runs can fall on shown only where it says something (small counts: "2.5"
/// brk, two runs apart), a large count rounded to whole ("78,590", not "78,589.5").
fn count(v: Option<f64>) -> String {
    match v {
        None => NA.into(),
        Some(v) if v.abs() >= 100.0 => fmt_count(v),
        Some(v) if v.fract() == 0.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// The columns of the wall time: its median, spread, range (`wide`) and ratio.
fn wall_columns(wide: bool) -> Vec<Column> {
    let mut cols = vec![
        column("allocator", |r| r.allocator.clone()),
        column("runs", |r| r.runs.to_string()),
        column("wall p50", |r| {
            r.wall_median_ms.map_or(NA.into(), |v| fmt_ns(v * 1e6))
        }),
        column("±MAD", |r| {
            r.wall_mad_pct.map_or(NA.into(), |v| format!("{v:.1}%"))
        }),
    ];
    if wide {
        cols.push(column("min", |r| {
            r.wall_min_ms.map_or(NA.into(), |v| fmt_ns(v * 1e6))
        }));
        cols.push(column("max", |r| {
            r.wall_max_ms.map_or(NA.into(), |v| fmt_ns(v * 1e6))
        }));
    }
    cols.push(column("vs base", |r| {
        r.vs_baseline.map_or(NA.into(), |v| format!("{v:.2}x"))
    }));
    cols
}

/// The columns that fit a screen: the wall time, its spread and ratio, the figures whose
/// runs are searched for behaviours but the memory syscalls (faults, peak RSS), and the
/// memory syscalls as one sum (the others: `--verbose`).
fn compact_columns(baseline: &str) -> (Vec<String>, Vec<Column>) {
    let mut cols = wall_columns(false);
    cols.extend(
        RUN_METRICS
            .iter()
            .filter(|m| m.spread && !m.syscall)
            .map(|m| entry(*m)),
    );
    // Unavailable when any of them is: a partial sum would be a false one.
    cols.push(column("mem calls", |r| {
        if perturbed(r) {
            PERTURBED.into()
        } else {
            count(r.per_run.memory_calls())
        }
    }));
    named_headers(cols, baseline)
}

fn named_headers(cols: Vec<Column>, baseline: &str) -> (Vec<String>, Vec<Column>) {
    let headers = cols
        .iter()
        .map(|(h, _)| {
            if *h == "vs base" {
                format!("vs {baseline}")
            } else {
                h.to_string()
            }
        })
        .collect();
    (headers, cols)
}

/// Every column: the wall time's, then each per-run registry entry's.
fn columns(baseline: &str) -> (Vec<String>, Vec<Column>) {
    let mut cols = wall_columns(true);
    cols.extend(RUN_METRICS.iter().map(|m| entry(*m)));
    named_headers(cols, baseline)
}

fn table_rows(rows: &[ExecRow], cols: &[Column]) -> Vec<TableRow> {
    rows.iter()
        .map(|r| TableRow {
            cells: cols.iter().map(|(_, f)| f(r)).collect(),
            failure: r.error.clone(),
        })
        .collect()
}

/// The one row every ratio is against, or "its baseline" where rows have different
/// ones (a session of several commands: each against its allocator's first command).
fn baseline(rows: &[ExecRow]) -> String {
    let mut all = rows.iter().filter_map(|r| r.baseline.as_deref());
    match all.next() {
        Some(first) if all.all(|b| b == first) => first.to_string(),
        Some(_) => "baseline (below)".into(),
        None => "base".into(),
    }
}

/// Aligned text table. A failed row shows its name and cause.
pub fn to_table(rows: &[ExecRow]) -> String {
    let (headers, cols) = columns(&baseline(rows));
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    render_table(&h, 1, &table_rows(rows, &cols))
}

/// The table that fits a screen (see [`compact_columns`]).
pub fn to_compact_table(rows: &[ExecRow]) -> String {
    let (headers, cols) = compact_columns(&baseline(rows));
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    render_table(&h, 1, &table_rows(rows, &cols))
}

/// tune's table of a command's knob sets: the columns that fit a screen but the ratio to
/// the first allocator (tune's verdicts give each set against its own allocator's
/// defaults), the first column named "set".
pub fn to_sets_table(rows: &[ExecRow]) -> String {
    let (headers, cols) = compact_columns(&baseline(rows));
    let keep: Vec<bool> = cols.iter().map(|(h, _)| *h != "vs base").collect();
    let h: Vec<&str> = headers
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(h, _)| if h == "allocator" { "set" } else { h.as_str() })
        .collect();
    let cols: Vec<Column> = cols
        .into_iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| c)
        .collect();
    render_table(&h, 1, &table_rows(rows, &cols))
}

/// exec's first screen in `width` columns: the command, then per allocator its wall time
/// against the baseline with the interval and verdict, the cause in words where the
/// counts differ and the system times; the table that fits; the notes; how it ran.
pub fn answer_screen(record: &ExecRecord, rows: &[ExecRow], width: usize) -> String {
    use crate::fmt::wrap;
    let header = header(record);
    let mut lines = header.lines();
    let mut s = String::new();
    // The command (or the session's commands) first, the rest of the header at the end.
    let command_lines: Vec<&str> = if record.commands.is_empty() {
        lines.next().into_iter().collect()
    } else {
        (&mut lines).take(record.commands.len() + 1).collect()
    };
    for l in &command_lines {
        let indent = if l.starts_with("  ") { "      " } else { "  " };
        s.push_str(&wrap(
            l,
            width,
            if l.starts_with("  ") { "  " } else { "" },
            indent,
        ));
    }
    let items = crate::analysis::command::answer(rows);
    if !rows.iter().any(|r| r.status.is_ok() && r.runs > 0) {
        s.push('\n');
        s.push_str(&to_compact_table(rows));
        return s;
    }
    for item in &items {
        s.push_str(&wrap(&item.text, width, "", "      "));
    }
    s.push('\n');
    s.push_str(&to_compact_table(rows));
    let mut notes: Vec<String> = behaviour_notes(rows)
        .into_iter()
        .chain(spread_notes(rows))
        .map(|n| format!("note: {n}"))
        .collect();
    notes.extend(rows.iter().filter_map(|r| {
        let note = r.traced_words.as_ref()?;
        Some(format!("note: {}'s syscalls: {note}", r.allocator))
    }));
    notes.extend(order_line(record));
    if !notes.is_empty() {
        s.push('\n');
    }
    for n in notes {
        s.push_str(&wrap(&n, width, "", "  "));
    }
    s.push('\n');
    for l in lines {
        s.push_str(&wrap(l, width, "", "  "));
    }
    s.push_str(&wrap(
        "every column and each line in full: --verbose; every figure: --format csv or json",
        width,
        "",
        "  ",
    ));
    s
}

pub fn to_markdown(rows: &[ExecRow]) -> String {
    let (headers, cols) = columns(&baseline(rows));
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    render_markdown(&h, 1, &table_rows(rows, &cols))
}

impl crate::export::Rows for ExecRow {
    fn empty() -> Self {
        ExecRow::default()
    }
    fn table(rows: &[Self]) -> String {
        to_table(rows)
    }
    fn markdown(rows: &[Self]) -> String {
        to_markdown(rows)
    }
}

/// Where the command's own process held far less than the run's peak RSS (wait4's, which
/// covers the children it waited for): its work is in a child the driver does not
/// sample, so its memory over time says little.
fn memory_notes(rows: &[ExecRow]) -> Vec<String> {
    use crate::model::metric::MEM_PEAK;
    rows.iter()
        .filter_map(|r| {
            let sampled = r.memory[MEM_PEAK]?;
            let whole = r.per_run[RUN_PEAK_RSS]? * RUN_PEAK_RSS.scale;
            (sampled < 0.5 * whole).then(|| {
                format!(
                    "{}: the command's own process held at most {} when sampled, its run's peak RSS was {}: the memory over time (memory/*.csv, report.html) is of the command's process alone, not of the children it starts (or it lived too short to be sampled at its peak)",
                    r.allocator,
                    crate::fmt::human_bytes(sampled as u64),
                    crate::fmt::human_bytes(whole as u64)
                )
            })
        })
        .collect()
}

/// The notes beside the answer's items: the figures that fall into two or more groups,
/// the spread of the runs, each allocator's memory over its runs, where that memory is
/// the command's process alone, and the syscalls counted under the tracer.
pub fn notes(rows: &[ExecRow]) -> Vec<String> {
    let mut lines = Vec::new();
    lines.extend(
        behaviour_notes(rows)
            .into_iter()
            .map(|n| format!("note: {n}")),
    );
    lines.extend(spread_notes(rows).into_iter().map(|n| format!("note: {n}")));
    lines.extend(crate::analysis::command::memory_lines(rows));
    lines.extend(memory_notes(rows).into_iter().map(|n| format!("note: {n}")));
    // Syscalls counted under the tracer come from a slower run than the rest of the row.
    lines.extend(rows.iter().filter_map(|r| {
        let note = r.traced_words.as_ref()?;
        Some(format!("note: {}'s syscalls: {note}", r.allocator))
    }));
    lines
}

/// "order: …" when a run's wall time depends on the allocator that ran before it (from
/// the rounds' shuffled orders); None when it does not, or the order was not recorded.
pub fn order_line(record: &ExecRecord) -> Option<String> {
    use crate::analysis::order::{order_effect, runs_in_sequence, PERMUTATIONS, SEED};
    let mut runs: Vec<(u32, u32, usize, f64)> = Vec::new();
    for (i, a) in record.allocators.iter().enumerate() {
        for r in &a.runs {
            runs.push((r.round, r.position?, i, r.wall_ns as f64));
        }
    }
    runs.sort_by_key(|r| (r.0, r.1));
    let sequence: Vec<(usize, Option<f64>)> = runs.iter().map(|r| (r.2, Some(r.3))).collect();
    let name = |i: usize| record.allocators[i].allocator.clone();
    order_effect(&runs_in_sequence(&sequence, &name), PERMUTATIONS, SEED)?
        .describe(record.confidence, "runs")
}

/// The lines above the table: the command, how it was run, and what counted.
pub fn header(record: &ExecRecord) -> String {
    let e = &record.environment;
    let mut s = if record.commands.is_empty() {
        format!("command: {}\n", shell_words(&record.command))
    } else {
        let mut s = format!(
            "{} commands in one session, each under each allocator in the same shuffled rounds; each compared with [{}] under its allocator, round by round:\n",
            record.commands.len(),
            record.commands[0].name
        );
        for c in &record.commands {
            s.push_str(&format!("  [{}] {}\n", c.name, shell_words(&c.command)));
        }
        s
    };
    let ran = record.rounds_cut.unwrap_or(record.runs_requested);
    let rounds = ran + record.adaptive_rounds;
    s.push_str(&format!(
        "{} run(s) per allocator{} after {} warm-up(s), {} (ratios: median of the per-round ratios, {} interval, significant beyond ±{} %); THP {}{}; {} · {}\n",
        rounds,
        if let Some(cut) = record.rounds_cut {
            format!(
                " ({cut} of the {} asked for: --max-time {} s left no room for round {}, the evidence runs counted)",
                record.runs_requested,
                record.max_time_s.map_or("?".into(), crate::fmt::trim_float),
                cut + 1
            )
        } else if record.adaptive_rounds > 0 {
            let rows = crate::analysis::command::rows(record);
            let open = rows
                .iter()
                .filter(|r| crate::analysis::command::still_open(r, record.noise_threshold))
                .count();
            format!(
                " ({} and {} adaptive, while a comparison with the first was open{})",
                record.runs_requested,
                record.adaptive_rounds,
                match open {
                    0 => String::new(),
                    n => format!(
                        "; {} still open when --max-time or the 60 rounds ended them",
                        crate::fmt::counted(n, "was", "were")
                    ),
                }
            )
        } else {
            String::new()
        },
        record.warmup,
        match record.order_seed {
            Some(seed) if record.allocators.iter().flat_map(|a| &a.runs).any(|r| r.env_pad_bytes.is_some()) => format!("every allocator once per round in a shuffled order (order seed {seed}), each run's environment padded by a random 0–4 KiB (its stack's offset, the run's env_pad_bytes)"),
            Some(seed) => format!("every allocator once per round in a shuffled order (order seed {seed})"),
            None => "allocators alternating in a fixed order".to_string(),
        },
        match coverage(rounds as usize, record.confidence) {
            _ if rounds < 2 => "no".to_string(),
            Some(c) if c >= record.confidence => level_text(record.confidence),
            _ if crate::analysis::stats::too_few(rounds as usize, "runs", record.confidence)
                .is_none() =>
            {
                format!(
                    "{} (unpaired, over the runs: too few rounds to pair)",
                    level_text(record.confidence)
                )
            }
            _ => format!(
                "{:.1} % (all {} runs can give; no verdict below {}: {} runs give it)",
                100.0
                    * crate::analysis::stats::decidable_coverage(
                        rounds as usize,
                        record.confidence
                    ),
                rounds,
                level_text(record.confidence),
                crate::analysis::stats::rounds_to_decide(record.confidence)
            ),
        },
        crate::fmt::trim_float(record.noise_threshold * 100.0),
        e.thp_enabled,
        if record.thp == crate::model::spec::Thp::Never {
            " (disabled for the command by prctl)"
        } else {
            ""
        },
        e.kernel,
        e.cpu_model,
    ));
    let counter = match record.syscall_counter.as_str() {
        "ptrace" => {
            "ptrace (memory syscalls only, from one extra untimed traced run per allocator)"
        }
        other => other,
    };
    s.push_str(&format!(
        "per run: wall time from release to reaping, rusage from wait4, syscalls of the whole process tree: {counter}\n"
    ));
    let versions: Vec<String> = record
        .allocators
        .iter()
        .filter_map(|a| a.version.as_ref().map(|v| format!("{}: {v}", a.allocator)))
        .collect();
    if !versions.is_empty() {
        s.push_str(&versions.join(" · "));
        s.push('\n');
    }
    // A program that links its own allocator: what its system row ran instead.
    for a in &record.allocators {
        let program = match a.command_index {
            Some(k) => record.commands.get(k).map(|c| c.command.as_slice()),
            None => Some(record.command.as_slice()),
        }
        .and_then(|c| c.first())
        .map_or("the program", String::as_str);
        if let Some(note) = a.own_allocator_note(program) {
            s.push_str(&note);
            s.push('\n');
        }
    }
    if !record.complete {
        let ran: Vec<String> = record
            .allocators
            .iter()
            .map(|a| format!("{} {}", a.allocator, a.runs.len()))
            .collect();
        s.push_str(&format!(
            "INCOMPLETE: stopped before every round ran; runs that finished of the {} planned per allocator: {}\n",
            record.runs_requested,
            ran.join(", ")
        ));
    }
    s
}

pub use crate::fmt::shell_words;

/// The run times of one allocator as an HDR histogram (nanoseconds, 3 significant
/// digits), or None without runs.
pub fn histogram(a: &AllocatorRuns) -> Option<Histogram<u64>> {
    if a.runs.is_empty() {
        return None;
    }
    let mut h = Histogram::<u64>::new(3).ok()?;
    for r in &a.runs {
        h.record(r.wall_ns.max(1)).ok()?;
    }
    Some(h)
}

/// One allocator's runs as an interval log: one interval per run, at the time it
/// began, whose histogram holds that run's wall time (ns); `of` says of what command
/// and size. The histograms share their range (up to the longest run), so that a reader
/// adds them up as they are.
pub fn interval_log(a: &AllocatorRuns, of: &str) -> crate::export::hlog::IntervalLog {
    let highest = a.runs.iter().map(|r| r.wall_ns).max().unwrap_or(0).max(2);
    crate::export::hlog::IntervalLog {
        what: format!(
            "wall time of each run of {of} under {}; one interval per run (round order is time order), from the moment its process was released to exec until it was reaped, holding that one value",
            a.allocator
        ),
        intervals: a
            .runs
            .iter()
            .filter_map(|r| {
                let mut h = Histogram::<u64>::new_with_bounds(1, highest, 3).ok()?;
                h.record(r.wall_ns.max(1)).ok()?;
                Some(crate::export::hlog::Interval {
                    label: format!("round {}", r.round),
                    start_unix_ns: r.start_unix_ns,
                    length_ns: r.wall_ns,
                    histogram: h,
                })
            })
            .collect(),
    }
}

pub use crate::model::spec::file_stem;

/// An exec folder's findings.json: the answer the console, REPORT.md and report.html
/// lead with, and the rest of the findings in words (every figure is in summary.csv).
#[derive(serde::Serialize)]
struct ExecFindings {
    schema: &'static str,
    command: Vec<String>,
    complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_by: Option<String>,
    noise_threshold: f64,
    confidence: f64,
    answer: Vec<crate::analysis::findings::Item>,
    /// Allocators whose runs failed (none of them is in the answer), with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failed: Vec<FailedAllocator>,
    /// The notes beside the answer: figures in two or more groups, spreads, memory, the
    /// tracer's counts, the order effect.
    findings: Vec<String>,
}

/// An allocator of an exec session whose runs failed.
#[derive(serde::Serialize)]
struct FailedAllocator {
    allocator: String,
    error: String,
}

/// Writes (atomically, file by file) the record and everything derived from it into
/// its folder: exec.json, summary.csv, env.json, histograms/<allocator>.us.csv/.us.hgrm
/// and .ns.hlog, findings.json, REPORT.md and report.html.
pub fn save(folder: &Folder, record: &ExecRecord) -> Result<(), String> {
    let err = |e: crate::export::results::ResultsError| e.to_string();
    folder.json("exec.json", record).map_err(err)?;
    let rows = rows(record);
    folder
        .text(
            "summary.csv",
            &crate::export::csv::csv_of(&rows, &ExecRow::default()),
        )
        .map_err(err)?;
    folder.json("env.json", &record.environment).map_err(err)?;
    for a in &record.allocators {
        if let Some(h) = histogram(a) {
            folder
                .histogram(
                    &file_stem(&a.allocator),
                    &h,
                    &interval_log(a, "the command"),
                )
                .map_err(err)?;
        }
        let runs: Vec<(String, &[crate::model::memory::MemorySample])> = a
            .runs
            .iter()
            .map(|r| (r.round.to_string(), &r.memory[..]))
            .collect();
        if let Some(text) = crate::export::results::memory_csv("run", &runs) {
            folder
                .text(&format!("memory/{}.csv", file_stem(&a.allocator)), &text)
                .map_err(err)?;
        }
    }
    let items = crate::analysis::command::answer(&rows);
    let mut findings_lines = notes(&rows);
    findings_lines.extend(order_line(record));
    let findings = ExecFindings {
        schema: crate::analysis::findings::SCHEMA,
        command: record.command.clone(),
        complete: record.complete,
        stopped_by: record.stopped_by.clone(),
        noise_threshold: record.noise_threshold,
        confidence: record.confidence,
        answer: items.clone(),
        failed: rows
            .iter()
            .filter(|r| !r.status.is_ok())
            .map(|r| FailedAllocator {
                allocator: r.allocator.clone(),
                error: r.error.clone().unwrap_or_else(|| "unknown".into()),
            })
            .collect(),
        findings: findings_lines.clone(),
    };
    folder.json("findings.json", &findings).map_err(err)?;
    let mut md = String::from("# alloclab exec\n\n```\n");
    md.push_str(&header(record));
    md.push_str("```\n\n");
    if !items.is_empty() {
        md.push_str("## Answer\n\n");
        for i in &items {
            md.push_str(&format!("- {}\n", i.text));
        }
        md.push('\n');
    }
    md.push_str(&to_markdown(&rows));
    if !findings_lines.is_empty() {
        md.push('\n');
        for l in &findings_lines {
            md.push_str(&format!("* {l}\n"));
        }
    }
    md.push_str(
        "\nTimes and counts are medians over the runs; ±MAD is the median absolute deviation of the wall time. \
Run times per allocator: `histograms/<allocator>.us.csv` (HdrHistogram, µs). Every run: `exec.json`; the answer as data: `findings.json`.\n",
    );
    folder.text("REPORT.md", &md).map_err(err)?;
    let page = super::html::Page {
        title: if record.complete {
            format!("alloclab exec: {}", shell_words(&record.command))
        } else {
            // As run, sweep and compare pages say it: first, with what ran.
            let ran: usize = record.allocators.iter().map(|a| a.runs.len()).sum();
            // Rounds added to decide a comparison count as planned once begun.
            let rounds = record
                .allocators
                .iter()
                .flat_map(|a| a.runs.iter().map(|r| r.round as usize))
                .max()
                .unwrap_or(0)
                .max(record.runs_requested as usize);
            let planned = rounds * record.allocators.len();
            format!(
                "INCOMPLETE ({ran} of {planned} runs): alloclab exec: {}",
                shell_words(&record.command)
            )
        },
        environment: header(record).lines().map(str::to_string).collect(),
        answer: super::headlines::Answer {
            price: Vec::new(),
            items,
            more: 0,
            incomplete: (!record.complete).then(|| match &record.stopped_by {
                Some(signal) => format!("INCOMPLETE: interrupted by {signal} before every run ran"),
                None => {
                    "INCOMPLETE: the session stopped (or has not yet finished) before every run ran"
                        .to_string()
                }
            }),
        },
        sections: Vec::new(),
        findings: findings_lines,
        figures: super::html::exec_figures(&rows)
            .into_iter()
            .chain(super::html::exec_memory_figure(record))
            .collect(),
        drawings: Vec::new(),
        text: Vec::new(),
        markdown: vec![("REPORT.md".into(), md.clone())],
    };
    folder.text("report.html", &page.render()).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::median;
    use crate::analysis::stats::DEFAULT_LEVEL;
    use crate::model::command::ExecRun;

    #[test]
    fn medians_and_counts() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(count(Some(3.0)), "3");
        assert_eq!(count(Some(2.5)), "2.5");
        assert_eq!(count(Some(155_392.0)), "155,392");
        assert_eq!(count(Some(78_589.5)), "78,590");
        assert_eq!(count(Some(-77_770.5)), "-77,771");
        assert_eq!(count(Some(112.5)), "113");
        assert_eq!(count(None), "n/a");
    }

    #[test]
    fn commands_are_quoted_for_the_shell() {
        let w = |v: &[&str]| shell_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(w(&["python3", "x.py", "--n=3"]), "python3 x.py --n=3");
        assert_eq!(w(&["sh", "-c", "echo 'a b'"]), "sh -c 'echo '\\''a b'\\'''");
        assert_eq!(w(&[""]), "''");
    }

    fn runs(walls: &[(u32, u64)]) -> Vec<ExecRun> {
        walls
            .iter()
            .map(|&(round, wall_ns)| ExecRun {
                round,
                position: None,
                wall_ns,
                start_unix_ns: None,
                usage: Default::default(),
                syscalls: None,
                memory: Vec::new(),
                memory_unavailable: None,
                idle_from_ms: None,
                env_pad_bytes: None,
            })
            .collect()
    }

    #[test]
    fn ratios_pair_runs_of_the_same_round() {
        // The other allocator takes twice as long in every round, whatever the drift
        // between rounds; listed out of order.
        let base = runs(&[(1, 100), (2, 150), (3, 120), (4, 300), (5, 110), (6, 130)]);
        let other = runs(&[(6, 260), (1, 200), (3, 240), (2, 300), (5, 220), (4, 600)]);
        let c = paired(&base, &other, 0.02, DEFAULT_LEVEL).unwrap();
        assert_eq!((c.ratio, c.pairs), (2.0, 6));
        assert_eq!(c.verdict, Some(crate::analysis::stats::Verdict::Slower));
        let same = paired(&base, &base, 0.02, DEFAULT_LEVEL).unwrap();
        assert_eq!(
            same.verdict,
            Some(crate::analysis::stats::Verdict::NoSignificantDifference)
        );
    }

    #[test]
    fn widely_spread_runs_are_flagged() {
        let row = |min: f64, max: f64| ExecRow {
            allocator: "mimalloc".into(),
            runs: 3,
            wall_min_ms: Some(min),
            wall_max_ms: Some(max),
            wall_median_ms: Some(1790.0),
            ..Default::default()
        };
        // 0.71 s, 1.79 s, 1.85 s: bimodal, flagged.
        let notes = spread_notes(&[row(710.0, 1850.0)]);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("mimalloc's runs spread from 710 ms to 1.85 s"),
            "{notes:?}"
        );
        assert!(spread_notes(&[row(1780.0, 1850.0)]).is_empty());
    }
}
