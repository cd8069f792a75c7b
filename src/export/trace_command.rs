//! The files of `alloclab trace -- CMD`: `trace.json` (schema `alloclab.trace-command/1`),
//! the untraced runs (`untraced.json`, exec's record), each allocator's timeline over
//! time (`timeline/`, in bins from the exec on), every memory syscall with its time, size
//! and cause (`events/`), folded stacks, flame graphs and the differential view
//! (`stacks/`, `flamegraphs/`, as for a built-in trace), plots over time, REPORT.md and
//! the console summary.

use super::folder::Folder;
use super::results::ResultsError;
use super::svg::{self, Axis, Chart, Scale, Series};
use super::trace::{
    file_stem, files_list, flamegraph, lines, save_differential, save_stacks, stack_links,
};
use crate::analysis::python::{LineRow, PythonView};
use crate::analysis::trace::{Attribution, Bin, CountCheck, IterationEvents};
use crate::fmt::{fmt_ns, group_thousands, human_bytes, wrap};
use crate::model::metric::{Metric, RunFigures, RUN_METRICS, RUN_MINOR_FAULTS};
use crate::model::spec::Allocator;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

pub const SCHEMA: &str = "alloclab.trace-command/1";

/// The untraced runs of one allocator, which the traced run is stated against.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Untraced {
    pub runs: usize,
    pub wall_median_ns: Option<f64>,
    pub wall_ci_ns: Option<(f64, f64)>,
    pub wall_ci_coverage: Option<f64>,
    /// Medians over the runs of the per-run registry entries whose runs are searched for
    /// behaviours but the syscalls (faults, peak RSS): `<key>_median`.
    #[serde(flatten)]
    pub medians: Medians,
    /// The median over the runs of their memory syscalls (None where not counted).
    pub syscalls_median: Option<f64>,
    /// The figures whose untraced runs fall into two or more groups: one traced run is
    /// of one of them.
    pub behaviours: Vec<crate::model::behaviours::Behaviours>,
    /// The command's memory over the untraced runs (sampled by the driver: peak, mean,
    /// end, …), medians with their intervals, as exec gives them; null where not sampled.
    #[serde(flatten)]
    pub memory: crate::model::metric::MemoryFigures,
    #[serde(flatten)]
    pub memory_ci: crate::model::metric::MemoryIntervals,
}

/// Per-run medians, serialised as `<key>_median` for each per-run registry entry whose
/// runs are searched for behaviours, but the syscalls.
#[derive(Clone, Debug, Default)]
pub struct Medians(pub RunFigures);

impl Medians {
    /// The entries it gives.
    pub fn entries() -> impl Iterator<Item = &'static Metric> {
        RUN_METRICS.iter().filter(|m| m.spread && !m.syscall)
    }
}

impl Serialize for Medians {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for m in Medians::entries() {
            map.serialize_entry(&format!("{}_median", m.key), &self.0[*m])?;
        }
        map.end()
    }
}

/// One allocator's traced run of the command.
#[derive(Clone, Debug, Serialize)]
pub struct CommandTrace {
    pub label: String,
    pub allocator: Allocator,
    pub failure: Option<String>,
    pub mechanism: Option<String>,
    /// The same paragraph in its parts (one per mechanism and kind of event).
    #[serde(skip)]
    pub mechanism_parts: Vec<String>,
    pub attributions: Vec<Attribution>,
    /// The process perf started and its program.
    pub pid: u32,
    pub comm: String,
    /// From its exec to its exit, as perf timed them.
    pub duration_ns: Option<u64>,
    /// Processes that left an event.
    pub processes: usize,
    /// Every user page fault of the run (None where not counted).
    pub faults: Option<u64>,
    pub syscalls: IterationEvents,
    pub peak_rss_bytes: Option<u64>,
    pub bin_ns: u64,
    pub untraced: Untraced,
    /// Traced duration / the untraced runs' median wall time, and over its interval.
    pub ratio: Option<f64>,
    pub ratio_range: Option<(f64, f64)>,
    pub skipped_lines: usize,
    pub lost: Option<String>,
    /// The recorded memory syscalls against the lab's counters of the same run.
    pub count_check: CountCheck,
    /// What its calls and faults did, from one more run recorded with their arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::model::evidence::Recorded>,
    /// A CPython command's events by Python line (Err: why there are none); in JSON the
    /// view, or `{"missing": why}`, or null for a command that is not a Python program.
    #[serde(serialize_with = "python_json")]
    pub python: Option<Result<crate::analysis::python::PythonView, String>>,
    #[serde(skip)]
    pub bins: Vec<Bin>,
    /// `time_ms,pid,call,bytes,advice,cause` rows.
    #[serde(skip)]
    pub syscall_rows: Vec<String>,
    #[serde(skip)]
    pub faults_folded: Vec<String>,
    #[serde(skip)]
    pub syscalls_folded: Vec<String>,
}

fn python_json<S: serde::Serializer>(
    v: &Option<Result<PythonView, String>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Missing<'a> {
        missing: &'a str,
    }
    match v {
        None => s.serialize_none(),
        Some(Ok(view)) => view.serialize(s),
        Some(Err(why)) => Missing { missing: why }.serialize(s),
    }
}

impl CommandTrace {
    pub fn failed(label: &str, allocator: Allocator, why: String, untraced: Untraced) -> Self {
        CommandTrace {
            label: label.to_string(),
            allocator,
            failure: Some(why),
            mechanism: None,
            mechanism_parts: Vec::new(),
            attributions: Vec::new(),
            pid: 0,
            comm: String::new(),
            duration_ns: None,
            processes: 0,
            faults: None,
            syscalls: IterationEvents::default(),
            peak_rss_bytes: None,
            bin_ns: 0,
            untraced,
            ratio: None,
            ratio_range: None,
            skipped_lines: 0,
            lost: None,
            count_check: CountCheck::default(),
            evidence: None,
            python: None,
            bins: Vec::new(),
            syscall_rows: Vec::new(),
            faults_folded: Vec::new(),
            syscalls_folded: Vec::new(),
        }
    }

    fn traced(&self) -> bool {
        self.failure.is_none()
    }
}

/// `trace.json` of a command.
#[derive(Clone, Debug, Serialize)]
pub struct CommandTraceReport {
    pub schema: String,
    pub command: Vec<String>,
    pub fault_period: u64,
    /// What timed the memory syscalls: perf (with stacks) or ptrace (without).
    pub syscalls_timed_by: String,
    /// A Python command: the interpreter and how its lines were recorded, or why not.
    pub python: Option<String>,
    /// What the timeline lacks on this machine, and why (a tracepoint not in this kernel,
    /// no perf events).
    pub missing: Vec<String>,
    pub runs: u32,
    pub order_seed: u64,
    pub complete: bool,
    pub allocators: Vec<CommandTrace>,
}

pub const TIMELINE_HEADER: &str = "start_ms,faults,brk,mmap,munmap,madvise,mremap,brk_delta_bytes,mmap_bytes,munmap_bytes,madvise_bytes,rss_bytes,heap_top_offset_bytes,python_line";
pub const EVENTS_HEADER: &str = "time_ms,pid,call,bytes,advice,cause";

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// One row per bin.
pub fn timeline_csv(t: &CommandTrace) -> String {
    let mut s = format!("{TIMELINE_HEADER}\n");
    let lines = match &t.python {
        Some(Ok(v)) => v.bin_lines.as_slice(),
        _ => &[],
    };
    for (i, b) in t.bins.iter().enumerate() {
        let e = &b.events;
        let line = lines
            .get(i)
            .and_then(|l| l.as_deref())
            .map_or(String::new(), crate::export::csv::field);
        let _ = writeln!(
            s,
            "{:.6},{},{},{},{},{},{},{},{},{},{},{},{},{line}",
            b.start_ns as f64 / 1e6,
            opt(b.faults),
            e.brk,
            e.mmap,
            e.munmap,
            e.madvise,
            e.mremap,
            e.brk_delta_bytes,
            e.mmap_bytes,
            e.munmap_bytes,
            e.madvise_bytes,
            opt(b.rss_bytes),
            opt(b.heap_top_offset_bytes)
        );
    }
    s
}

/// The command for a chart's title: the program's file name and its arguments, at most
/// 40 characters.
fn short_command(command: &[String]) -> String {
    let mut words: Vec<String> = command.to_vec();
    if let Some(first) = words.first_mut() {
        if let Some(name) = Path::new(first.as_str()).file_name() {
            *first = name.to_string_lossy().into_owned();
        }
    }
    let s = words.join(" ");
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(39).collect::<String>())
    } else {
        s
    }
}

fn whole(v: f64) -> String {
    group_thousands(v.round() as i64)
}

/// Plots over time since the exec: faults and memory syscalls per bin, RSS, heap top.
fn plots(report: &CommandTraceReport) -> Vec<(String, String)> {
    let traced: Vec<&CommandTrace> = report.allocators.iter().filter(|t| t.traced()).collect();
    let series = |f: &dyn Fn(&Bin) -> Option<f64>| -> Vec<Series> {
        traced
            .iter()
            .map(|t| Series {
                label: t.label.clone(),
                color: super::plots::color(t.allocator, &t.label, 0),
                dash: None,
                points: t
                    .bins
                    .iter()
                    .filter_map(|b| f(b).map(|y| (b.start_ns as f64 / 1e6, y)))
                    .collect(),
            })
            .collect()
    };
    let x = || Axis {
        label: "ms since the exec".into(),
        scale: Scale::Linear,
        format: |v| format!("{v:.0}"),
    };
    let bin = traced
        .iter()
        .map(|t| t.bin_ns)
        .max()
        .map_or(String::new(), |b| format!(" per {}", fmt_ns(b as f64)));
    let what = short_command(&report.command);
    let mut out = vec![];
    if traced.iter().any(|t| t.faults.is_some()) {
        out.push((
            "plots/faults.svg",
            Chart {
                title: format!("User page faults{bin} — {what}"),
                x: x(),
                y: Axis {
                    label: "faults".into(),
                    scale: Scale::Linear,
                    format: whole,
                },
                series: series(&|b| b.faults.map(|f| f as f64)),
            },
        ));
    }
    out.push((
        "plots/syscalls.svg",
        Chart {
            title: format!("Memory syscalls{bin} — {what}"),
            x: x(),
            y: Axis {
                label: "brk, mmap, munmap, madvise, mremap".into(),
                scale: Scale::Linear,
                format: whole,
            },
            series: series(&|b| Some(b.events.syscalls() as f64)),
        },
    ));
    if traced.iter().any(|t| t.peak_rss_bytes.is_some()) {
        out.push((
            "plots/rss.svg",
            Chart {
                title: format!("RSS of the command's process — {what}"),
                x: x(),
                y: Axis {
                    label: "RSS (MiB)".into(),
                    scale: Scale::Linear,
                    format: |v| format!("{v:.1}"),
                },
                series: series(&|b| b.rss_bytes.map(|r| r as f64 / 1048576.0)),
            },
        ));
    }
    out.push((
        "plots/heap-top.svg",
        Chart {
            title: format!("Heap top against the first break — {what}"),
            x: x(),
            y: Axis {
                label: "MiB".into(),
                scale: Scale::Linear,
                format: |v| format!("{v:.1}"),
            },
            series: series(&|b| b.heap_top_offset_bytes.map(|h| h as f64 / 1048576.0)),
        },
    ));
    out.into_iter()
        .map(|(name, chart)| (name.to_string(), svg::render(&chart)))
        .collect()
}

/// The trace's answer, one item per allocator that was traced or failed: its mechanism,
/// or why its traced run failed. The console, REPORT.md, report.html and findings.json
/// show these items.
pub fn answer(report: &CommandTraceReport) -> Vec<crate::analysis::findings::Item> {
    report
        .allocators
        .iter()
        .filter_map(|t| {
            crate::analysis::findings::trace_item(
                &t.label,
                t.failure.as_deref(),
                &t.mechanism_parts,
                None,
                "run",
                &t.attributions,
            )
        })
        .collect()
}

/// Writes every file of the trace (the untraced record is written by the session);
/// returns the names written, in order (REPORT.md and the console name only these).
pub fn save(
    folder: &Folder,
    report: &CommandTraceReport,
    untraced: Option<&crate::model::command::ExecRecord>,
) -> Result<Vec<String>, ResultsError> {
    let mut written = Vec::new();
    // The untraced runs' memory over time, one file per allocator, as exec writes it.
    for a in untraced.iter().flat_map(|r| &r.allocators) {
        let runs: Vec<(String, &[crate::model::memory::MemorySample])> = a
            .runs
            .iter()
            .map(|r| (r.round.to_string(), &r.memory[..]))
            .collect();
        if let Some(text) = super::results::memory_csv("run", &runs) {
            let name = format!("memory/{}.csv", file_stem(&a.allocator));
            folder.text(&name, &text)?;
            written.push(name);
        }
    }
    for t in report.allocators.iter().filter(|t| t.traced()) {
        let stem = file_stem(&t.label);
        let timeline = format!("timeline/{stem}.csv");
        folder.text(&timeline, &timeline_csv(t))?;
        let mut events = format!("{EVENTS_HEADER}\n");
        events.push_str(&lines(&t.syscall_rows));
        let events_file = format!("events/{stem}.csv");
        folder.text(&events_file, &events)?;
        written.extend([timeline, events_file]);
        if report.syscalls_timed_by != "perf" {
            continue;
        }
        written.extend(save_stacks(
            folder,
            &t.label,
            &t.faults_folded,
            &t.syscalls_folded,
            report.fault_period,
        )?);
        if let Some(Ok(v)) = &t.python {
            written.extend(save_python_stacks(
                folder,
                &t.label,
                v,
                report.fault_period,
            )?);
        }
    }
    if let (true, Some((a, b))) = (report.syscalls_timed_by == "perf", first_two(report)) {
        written.extend(save_differential(
            folder,
            (&a.label, &a.faults_folded, &a.syscalls_folded),
            (&b.label, &b.faults_folded, &b.syscalls_folded),
        )?);
    }
    let mut drawings = Vec::new();
    for (name, svg) in plots(report) {
        folder.text(&name, &svg)?;
        written.push(name.clone());
        drawings.push((name, svg));
    }
    folder.json("trace.json", report)?;
    written.push("trace.json".into());
    let items = answer(report);
    folder.json(
        "findings.json",
        &crate::analysis::findings::TraceFindings {
            schema: crate::analysis::findings::SCHEMA,
            traced: report.command.join(" "),
            variant: None,
            size: None,
            complete: report.complete,
            answer: items.clone(),
        },
    )?;
    written.push("findings.json".into());
    let md = markdown(report, &written);
    folder.text("REPORT.md", &md.md)?;
    folder.text(
        "report.html",
        &super::trace::page(
            "alloclab trace -- command",
            &md,
            drawings,
            untraced
                .and_then(super::html::exec_memory_figure)
                .into_iter()
                .collect(),
            items,
            report.complete,
            {
                let (labels, views) = python_views(report);
                super::python_listing::html(&labels, &super::python_listing::lines(&views))
            },
        ),
    )?;
    written.extend(["REPORT.md".into(), "report.html".into()]);
    // The folder's guide to its files and columns, where the lab wrote it.
    if folder.holds(super::folder::GUIDE_FILE) {
        written.push(super::folder::GUIDE_FILE.into());
    }
    Ok(written)
}

/// The Python flame graphs of one allocator: Python frames (function, file and line,
/// outermost first) above the native frames the innermost one called.
fn save_python_stacks(
    folder: &Folder,
    label: &str,
    v: &PythonView,
    fault_period: u64,
) -> Result<Vec<String>, ResultsError> {
    let stem = file_stem(label);
    let mut written = Vec::new();
    for (what, folded, title, unit) in [
        (
            "faults",
            &v.faults_folded,
            format!("{label}: user page faults by Python line and call stack (1 sample = {fault_period} faults)"),
            "faults",
        ),
        (
            "syscalls",
            &v.syscalls_folded,
            format!("{label}: memory syscalls by Python line and call stack (every call)"),
            "calls",
        ),
    ] {
        let name = format!("stacks/{stem}.python.{what}.folded");
        folder.text(&name, &lines(folded))?;
        written.push(name);
        if let Some(svg) = flamegraph(folded, &title, unit) {
            let name = format!("flamegraphs/{stem}.python.{what}.svg");
            folder.text(&name, &svg)?;
            written.push(name);
        }
    }
    Ok(written)
}

/// `func2 (numpy_temporaries.py:33) `t = a.astype(np.float64)``.
fn line_place(r: &LineRow) -> String {
    let file = Path::new(&r.file)
        .file_name()
        .map_or(r.file.clone(), |f| f.to_string_lossy().into_owned());
    let mut s = format!("{} ({file}:{})", r.function, r.line);
    if let Some(src) = &r.source {
        let src: String = src.chars().take(60).collect();
        let _ = write!(s, " `{}`", src.replace('`', "'"));
    }
    s
}

/// One Python line with every kind of event at it.
struct LineSummary<'a> {
    first: &'a LineRow,
    /// (kind, count, native path) in the lab's order of kinds.
    kinds: Vec<(&'a str, u64, Option<&'a str>)>,
}

impl LineSummary<'_> {
    fn syscalls(&self) -> u64 {
        self.kinds
            .iter()
            .filter(|k| k.0 != "fault")
            .map(|k| k.1)
            .sum()
    }
    fn faults(&self) -> u64 {
        self.kinds
            .iter()
            .filter(|k| k.0 == "fault")
            .map(|k| k.1)
            .sum()
    }
}

/// The lines that ran more than once (a loop's, a called function's) and made an event
/// of some kind at least every other time they ran, amounting to at least 1 % of the
/// run's events of that kind; most memory syscalls first, then most faults.
fn repeated_lines(v: &PythonView) -> Vec<LineSummary<'_>> {
    let mut by: Vec<LineSummary<'_>> = Vec::new();
    for (kind, _) in order_kinds(&v.joined) {
        for r in v
            .lines
            .iter()
            .filter(|r| r.kind == kind && r.executions > 1)
        {
            let entry = (r.kind.as_str(), r.count, r.cause.as_deref());
            match by.iter_mut().find(|l| {
                l.first.file == r.file && l.first.line == r.line && l.first.function == r.function
            }) {
                Some(l) => l.kinds.push(entry),
                None => by.push(LineSummary {
                    first: r,
                    kinds: vec![entry],
                }),
            }
        }
    }
    let total = |kind: &str| v.joined.get(kind).map_or(0, |j| j.1);
    by.retain(|l| {
        l.kinds
            .iter()
            .any(|k| 2 * k.1 >= l.first.executions && 100 * k.1 >= total(k.0))
    });
    by.sort_by(|a, b| {
        b.syscalls()
            .cmp(&a.syscalls())
            .then(b.faults().cmp(&a.faults()))
    });
    by
}

/// "func2 (x.py:33) `t = a.astype(np.float64)` ran 211 times; per run of the line: 896 faults, 1.00
/// brk (malloc → _int_malloc → sysmalloc), 1.00 madvise (…)".
fn line_summary_text(l: &LineSummary<'_>) -> String {
    let n = l.first.executions as f64;
    let each: Vec<String> = l
        .kinds
        .iter()
        .map(|(kind, count, cause)| {
            let what = if *kind == "fault" { "faults" } else { kind };
            let via = cause.map_or(String::new(), |c| format!(" ({c})"));
            let each = *count as f64 / n;
            if each < 0.1 {
                format!("{} {what} in all{via}", whole(*count as f64))
            } else {
                format!("{} {what}{via}", per(each))
            }
        })
        .collect();
    format!(
        "{} ran {} times; per run of the line: {}",
        line_place(l.first),
        whole(n),
        each.join(", ")
    )
}

/// What the Python view says of one allocator, for the console: the repeated lines with
/// most events (up to `top`), each with its events per run of it; then per kind how many
/// events had a Python line and why the others had none; then the join's check.
pub fn python_summary(v: &PythonView, top: usize) -> Vec<String> {
    let mut out: Vec<String> = repeated_lines(v)
        .iter()
        .take(top)
        .map(line_summary_text)
        .collect();
    let mut at = Vec::new();
    for (kind, (joined, total)) in order_kinds(&v.joined) {
        if total > 0 {
            let what = if kind == "fault" {
                "faults"
            } else {
                kind.as_str()
            };
            at.push(format!(
                "{} of {} {what}",
                whole(joined as f64),
                whole(total as f64)
            ));
        }
    }
    if !at.is_empty() {
        out.push(format!(
            "at a Python line: {} (the rest in the interpreter's start-up and shutdown, or on threads that ran no Python; by kind and line in REPORT.md)",
            at.join(", ")
        ));
    }
    out.extend(python_notes(v));
    out
}

/// What the Python view says of one allocator, one entry per event kind: the lines with
/// most of its events (up to `top`), then what no line could be given.
pub fn python_lines(v: &PythonView, top: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, (joined, total)) in order_kinds(&v.joined) {
        if total == 0 {
            continue;
        }
        let rows: Vec<&LineRow> = v.lines.iter().filter(|r| r.kind == kind).collect();
        let mut parts: Vec<String> = rows
            .iter()
            .take(top)
            .map(|r| {
                let mut d = Vec::new();
                if let Some(p) = r.per_execution {
                    d.push(format!(
                        "{} per execution of the line, {} executions",
                        per(p),
                        whole(r.executions as f64)
                    ));
                }
                if let Some(c) = &r.cause {
                    d.push(c.clone());
                }
                let d = if d.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", d.join("; "))
                };
                format!(
                    "{} ({}) at {}{d}",
                    whole(r.count as f64),
                    percent(r.share),
                    line_place(r)
                )
            })
            .collect();
        if rows.len() > top {
            let rest: u64 = rows[top..].iter().map(|r| r.count).sum();
            parts.push(format!(
                "{} at {} other lines",
                whole(rest as f64),
                rows.len() - top
            ));
        }
        if let Some(u) = v.unjoined.get(&kind) {
            let why: Vec<String> = [
                (u.before_recorder, "in the interpreter's start-up"),
                (
                    u.after_recorder,
                    "in its shutdown, after the recorder stopped",
                ),
                (
                    u.after_limit,
                    "after the recorder stopped at its limit of records",
                ),
                (
                    u.after_halt,
                    "after the recorder stopped early (the notes say why)",
                ),
                (
                    u.lost,
                    "in records lost (the process ended without its exit handlers)",
                ),
                (u.native_thread, "on threads that ran no Python"),
                (u.no_frame, "outside any Python frame"),
            ]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, w)| format!("{} {w}", whole(n as f64)))
            .collect();
            if !why.is_empty() {
                parts.push(format!("no Python line: {}", why.join(", ")));
            }
        }
        let what = if kind == "fault" {
            "faults"
        } else {
            kind.as_str()
        };
        out.push(format!(
            "{what} {} ({} at a Python line): {}",
            whole(total as f64),
            whole(joined as f64),
            parts.join("; ")
        ));
    }
    out.extend(python_notes(v));
    out
}

/// The join's check against perf's own Python frames, and processes cut short.
fn python_notes(v: &PythonView) -> Vec<String> {
    let mut out = Vec::new();
    if let Some((a, n)) = v.perf_frames_agree {
        out.push(format!(
            "check: the join names the function of perf's own innermost Python frame in {} of {} stacked samples",
            whole(a as f64),
            whole(n as f64)
        ));
        for (kind, why, count) in &v.perf_frames_disagree {
            out.push(format!(
                "check: {} {kind} sample(s) differ: {why}",
                whole(*count as f64)
            ));
        }
    }
    if v.processes_full > 0 {
        out.push(format!(
            "the line recorder of {} of {} Python processes stopped at its limit of records (ALLOCLAB_PYTHON_MAX_RECORDS, 50 million by default): their later events count as after the recorder",
            v.processes_full, v.processes
        ));
    }
    if v.processes_cut_short > 0 {
        out.push(format!(
            "{} of {} Python processes ended without running their exit handlers (os._exit or a signal): their last records are lost",
            v.processes_cut_short, v.processes
        ));
    }
    // The recorder's own limits are the lab's, never the program's: the program ran on.
    for n in &v.recorder_notes {
        out.push(format!(
            "line recorder, {n} (the program itself ran on as it does untraced)"
        ));
    }
    out
}

/// The kinds in the lab's order: faults first, then the syscalls.
fn order_kinds(m: &std::collections::BTreeMap<String, (u64, u64)>) -> Vec<(String, (u64, u64))> {
    let order = ["fault", "brk", "mmap", "munmap", "madvise", "mremap"];
    order
        .iter()
        .filter_map(|k| m.get(*k).map(|v| (k.to_string(), *v)))
        .collect()
}

/// A share as a person reads it: "<1 %" rather than "0 %".
fn percent(share: f64) -> String {
    if share > 0.0 && share < 0.005 {
        "<1 %".into()
    } else {
        format!("{:.0} %", 100.0 * share)
    }
}

fn per(v: f64) -> String {
    if v >= 100.0 {
        whole(v)
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// REPORT.md's "By Python line" table of one allocator (up to `top` rows per kind).
fn python_table(md: &mut String, v: &PythonView, top: usize) {
    let _ = writeln!(
        md,
        "| event | count | share | per execution of the line | Python function | file:line | line | inside it | native path |\n|---|---:|---:|---:|---|---|---|---|---|"
    );
    for (kind, _) in order_kinds(&v.joined) {
        for r in v.lines.iter().filter(|r| r.kind == kind).take(top) {
            let file = Path::new(&r.file)
                .file_name()
                .map_or(r.file.clone(), |f| f.to_string_lossy().into_owned());
            let cell = |s: &str| s.replace('|', "\\|");
            let _ = writeln!(
                md,
                "| {kind} | {} | {:.1} % | {} | `{}` | {file}:{} | {} | {} | {} |",
                whole(r.count as f64),
                100.0 * r.share,
                r.per_execution.map_or("–".into(), per),
                cell(&r.function),
                r.line,
                r.source
                    .as_deref()
                    .map_or("–".into(), |s| format!("`{}`", cell(s).replace('`', "'"))),
                r.via.as_deref().map_or("–".into(), cell),
                r.cause.as_deref().map_or("–".into(), cell),
            );
        }
    }
    md.push('\n');
}

fn first_two(report: &CommandTraceReport) -> Option<(&CommandTrace, &CommandTrace)> {
    let mut ok = report.allocators.iter().filter(|t| t.traced());
    Some((ok.next()?, ok.next()?))
}

/// "traced run 412 ms, 1.85x the untraced runs' median wall time (223 ms [219 ms, 230 ms],
/// 96.9 % interval, 5 runs); its counts: 77,881 faults (untraced median 77,850), 81
/// memory syscalls (untraced median 81)".
fn cost_text(t: &CommandTrace, report: &CommandTraceReport) -> String {
    let u = &t.untraced;
    let Some(d) = t.duration_ns else {
        return "no traced duration (perf saw no exit)".into();
    };
    let span = if report.syscalls_timed_by == "perf" {
        "from exec to exit"
    } else {
        "from launch to end, under ptrace"
    };
    let mut s = format!("traced run {} {span}", fmt_ns(d as f64));
    match (u.wall_median_ns, t.ratio) {
        (Some(m), Some(r)) => {
            let ci = match (u.wall_ci_ns, u.wall_ci_coverage, t.ratio_range) {
                (Some((lo, hi)), Some(c), Some((rlo, rhi))) => format!(
                    " [{}, {}] ({:.1} % interval); {rlo:.2}x–{rhi:.2}x over it",
                    fmt_ns(lo),
                    fmt_ns(hi),
                    100.0 * c
                ),
                _ => String::new(),
            };
            let _ = write!(
                s,
                ", {r:.2}x the untraced runs' median wall time ({} of {} run(s){ci})",
                fmt_ns(m),
                u.runs
            );
        }
        _ => s.push_str(" (no untraced runs to state it against)"),
    }
    let mut counts = Vec::new();
    if let Some(f) = t.faults {
        counts.push(format!(
            "{} user faults{}",
            whole(f as f64),
            u.medians.0[RUN_MINOR_FAULTS].map_or(String::new(), |m| format!(
                " (untraced runs' median {} {})",
                whole(m),
                RUN_MINOR_FAULTS.label
            ))
        ));
    }
    counts.push(format!(
        "{} memory syscalls{}",
        whole(t.syscalls.syscalls() as f64),
        u.syscalls_median.map_or(String::new(), |m| format!(
            " (untraced runs' median {})",
            whole(m)
        ))
    ));
    let _ = write!(s, "; traced counts: {}", counts.join(", "));
    if !u.behaviours.is_empty() {
        let said: Vec<String> = u
            .behaviours
            .iter()
            .map(|b| crate::analysis::modes::describe(b, "runs"))
            .collect();
        let _ = write!(
            s,
            "; the untraced runs show {} (the traced run is one run, of one of them)",
            said.join("; ")
        );
    }
    s
}

pub fn markdown(report: &CommandTraceReport, written: &[String]) -> super::html::Report {
    use super::html::bullet;
    let mut md = String::new();
    let mut found = Vec::new();
    let _ = writeln!(md, "# Trace: `{}`\n", report.command.join(" "));
    if !report.complete {
        let _ = writeln!(
            md,
            "> **Incomplete:** {} of the allocators asked for were traced (interrupted, or a run failed).\n",
            report.allocators.iter().filter(|t| t.traced()).count()
        );
    }
    let about = if report.syscalls_timed_by == "perf" {
        format!(
            "One run of the command per allocator under `perf record`, from its exec to its exit: every brk, mmap, munmap, madvise and mremap of it and of every process it starts, with its user call stack; one user page fault in {} with its stack (DWARF unwinding); every user page fault and every change of the resident set without stacks, for the timeline. Counts are of the whole run, start-up included.",
            report.fault_period
        )
    } else {
        "One run of the command per allocator under the ptrace tracer, from its launch to its end: every brk, mmap, munmap, madvise and mremap of it and of every process it starts, with its arguments and the time the tracer saw it (each call stops the command for a round trip through the tracer). No call stacks, faults or RSS over time (they need perf events). Counts are of the whole run, start-up included.".to_string()
    };
    let _ = writeln!(md, "{about}\n");
    for m in &report.missing {
        bullet(
            &mut md,
            &mut found,
            "",
            &format!("**Not measured here:** {m}."),
        );
    }
    if let Some(p) = &report.python {
        let _ = writeln!(md, "## By Python line\n\n{p}.\n");
        for t in report.allocators.iter().filter(|t| t.traced()) {
            match &t.python {
                Some(Ok(v)) => {
                    let repeated = repeated_lines(v);
                    if !repeated.is_empty() {
                        let heading = format!(
                            "{}, the lines that ran more than once and made at least 1 % of a kind of event, most memory syscalls first:",
                            t.label
                        );
                        let _ = writeln!(md, "**{heading}**\n");
                        for l in repeated.iter().take(8) {
                            bullet(&mut md, &mut found, &heading, &line_summary_text(l));
                        }
                        md.push('\n');
                    }
                    let heading = format!("{}, by kind of event:", t.label);
                    let _ = writeln!(md, "**{heading}**\n");
                    for l in python_lines(v, 3) {
                        bullet(&mut md, &mut found, &heading, &l);
                    }
                    md.push('\n');
                    python_table(&mut md, v, 12);
                    let stem = file_stem(&t.label);
                    let graphs: Vec<String> =
                        [("faults", "faults"), ("memory syscalls", "syscalls")]
                            .into_iter()
                            .filter(|(_, f)| {
                                written.contains(&format!("flamegraphs/{stem}.python.{f}.svg"))
                            })
                            .map(|(what, f)| format!("[{what}](flamegraphs/{stem}.python.{f}.svg)"))
                            .collect();
                    if !graphs.is_empty() {
                        let _ = writeln!(
                            md,
                            "Flame graphs with the Python stack (function and line, import machinery folded) above the native frames: {} (folded: `stacks/{stem}.python.*.folded`).\n",
                            graphs.join(" · ")
                        );
                    }
                }
                Some(Err(why)) => {
                    let line = format!("**{}**: no Python lines: {why}", t.label);
                    bullet(&mut md, &mut found, "", &line);
                }
                None => {}
            }
        }
    }
    let _ = writeln!(md, "## Mechanism\n");
    for item in answer(report) {
        let _ = writeln!(md, "* {}", item.text);
    }
    let _ = writeln!(md, "\n## What tracing cost\n");
    for t in report.allocators.iter().filter(|t| t.traced()) {
        let line = format!(
            "{}: {}; {}",
            t.label,
            cost_text(t, report),
            t.count_check.text
        );
        bullet(&mut md, &mut found, "", &line);
    }
    let _ = writeln!(
        md,
        "\nThe untraced runs ({} per allocator, shuffled rounds, order seed {}) are exec's, in `untraced.json`; the traced counts are never mixed into them.\n",
        report.runs, report.order_seed
    );
    let memory: Vec<String> = report
        .allocators
        .iter()
        .filter_map(|t| {
            let text =
                crate::analysis::command::memory_text(&t.untraced.memory, &t.untraced.memory_ci)?;
            Some(format!("{}: {text}", t.label))
        })
        .collect();
    if !memory.is_empty() {
        let _ = writeln!(
            md,
            "## Memory over a run\n\nThe command's own process in its untraced runs, sampled by the driver (not its children): medians over the runs with their intervals.\n"
        );
        for l in &memory {
            bullet(&mut md, &mut found, "", l);
        }
        let _ = writeln!(
            md,
            "\nAs data: `memory/<allocator>.csv`, every sample of every untraced run; the traced run's RSS over time is in the timeline below (from kmem:rss_stat).\n"
        );
    }
    let _ = writeln!(md, "## Timeline\n");
    for name in ["faults", "syscalls", "rss", "heap-top"] {
        // The plots that were drawn (see `plots`).
        if written.contains(&format!("plots/{name}.svg")) {
            let _ = writeln!(md, "![{name}](plots/{name}.svg)\n");
        }
    }
    let _ = writeln!(
        md,
        "As data: `timeline/<allocator>.csv` ({TIMELINE_HEADER}), one row per bin; `events/<allocator>.csv` ({EVENTS_HEADER}), one row per memory syscall.\n"
    );
    let report_of = |md: String, found: Vec<String>| super::html::Report {
        md,
        environment: vec![about.replace('`', "")],
        findings: found,
    };
    if report.syscalls_timed_by != "perf" {
        return report_of(md, found);
    }
    let _ = writeln!(md, "## Call stacks\n");
    let labels: Vec<&str> = report
        .allocators
        .iter()
        .filter(|t| t.traced())
        .map(|t| t.label.as_str())
        .collect();
    stack_links(&mut md, &mut found, &labels, written);
    report_of(md, found)
}

/// The traced allocators with a Python view, and their views.
fn python_views(report: &CommandTraceReport) -> (Vec<&str>, Vec<&PythonView>) {
    report
        .allocators
        .iter()
        .filter(|t| t.traced())
        .filter_map(|t| match &t.python {
            Some(Ok(v)) => Some((t.label.as_str(), v)),
            _ => None,
        })
        .unzip()
}

pub fn console(report: &CommandTraceReport, out: &Path, written: &[String]) -> String {
    let width = crate::fmt::screen_width();
    let mut s = wrap(
        &format!(
            "`{}`, one traced run per allocator",
            report.command.join(" ")
        ),
        width,
        "",
        "  ",
    );
    for m in &report.missing {
        s.push_str(&wrap(&format!("not measured here: {m}"), width, "", "  "));
    }
    if let Some(p) = &report.python {
        s.push_str(&wrap(
            &format!("Python: {}", p.split(": run with").next().unwrap_or(p)),
            width,
            "",
            "  ",
        ));
    }
    // A Python command's own lines first, as a line profiler shows them.
    let (labels, views) = python_views(report);
    let (listed, elsewhere) =
        super::python_listing::own(super::python_listing::lines(&views), &report.command);
    s.push_str(&super::python_listing::console(
        &labels, &listed, elsewhere, width, 8, 3,
    ));
    let items = answer(report);
    for t in &report.allocators {
        // The allocator's answer item; a failed one has nothing more to say.
        s.push_str(&super::trace::item_lines(&items, &t.label, width));
        if t.failure.is_some() {
            continue;
        }
        match &t.python {
            Some(Ok(v)) => {
                for l in python_summary(v, 0) {
                    s.push_str(&wrap(&l, width, "  ", "    "));
                }
            }
            Some(Err(why)) => {
                s.push_str(&wrap(
                    &format!("no Python lines: {why}"),
                    width,
                    "  ",
                    "    ",
                ));
            }
            None => {}
        }
        s.push_str(&wrap(&cost_text(t, report), width, "  ", "    "));
        if let Some(p) = t.peak_rss_bytes {
            s.push_str(&wrap(
                &format!("peak RSS of the command's process {}", human_bytes(p)),
                width,
                "  ",
                "    ",
            ));
        }
        s.push_str(&wrap(&t.count_check.text, width, "  ", "    "));
        if let Some(l) = &t.lost {
            s.push_str(&wrap(&format!("perf: {l}"), width, "  ", "    "));
        }
    }
    s.push_str(&wrap(
        &format!("{}: {}", out.display(), files_list(written)),
        width,
        "",
        "  ",
    ));
    s
}
