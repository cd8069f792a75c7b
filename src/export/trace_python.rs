//! A Python command's trace by Python line: the lines that ran more than once with their
//! events per run of the line, each kind of event by line (with what no line could be
//! given), the table of REPORT.md and the flame graphs with the Python stack above the
//! native frames.

use super::flame::{flamegraph, lines};
use super::folder::Folder;
use super::results::ResultsError;
use crate::analysis::python::{LineRow, PythonView};
use crate::fmt::group_thousands;
use crate::model::spec::file_stem;
use std::fmt::Write as _;
use std::path::Path;

fn whole(v: f64) -> String {
    group_thousands(v.round() as i64)
}

/// The Python flame graphs of one allocator: Python frames (function, file and line,
/// outermost first) above the native frames the innermost one called.
pub(crate) fn save_python_stacks(
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
pub(crate) struct LineSummary<'a> {
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
pub(crate) fn repeated_lines(v: &PythonView) -> Vec<LineSummary<'_>> {
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
pub(crate) fn line_summary_text(l: &LineSummary<'_>) -> String {
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
pub(crate) fn python_table(md: &mut String, v: &PythonView, top: usize) {
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
