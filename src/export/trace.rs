//! The files of `alloclab trace`: `trace.json` (schema `alloclab.trace/1`), each
//! allocator's worker record with its timeline (`runs/`), the timeline as CSV
//! (`timeline/`), folded call stacks (`stacks/`), flame graphs and the differential view
//! of the first two allocators (`flamegraphs/`, inferno), timeline plots (`plots/`),
//! REPORT.md, and the console summary.

use super::folder::Folder;
use super::results::ResultsError;
use super::svg::{self, Axis, Chart, Scale, Series};
use crate::analysis::trace::{Attribution, EventKind, IterationEvents};
use crate::fmt::{fmt_ns, group_thousands, wrap};
use crate::model::metric::{Source, MINOR_FAULTS, TIMELINE};
use crate::model::record::RunRecord;
use crate::model::spec::{Allocator, Variant, Workload};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

pub const SCHEMA: &str = "alloclab.trace/1";

/// What tracing cost: the traced run's median iteration against the untraced processes'.
#[derive(Clone, Debug, Serialize)]
pub struct Overhead {
    pub traced_median_ns: Option<f64>,
    pub untraced_median_ns: Option<f64>,
    pub untraced_ci_ns: Option<(f64, f64)>,
    pub untraced_ci_coverage: Option<f64>,
    pub untraced_processes: usize,
    /// traced / untraced medians.
    pub ratio: Option<f64>,
    /// The ratio over the untraced median's interval.
    pub ratio_range: Option<(f64, f64)>,
}

/// One allocator's trace.
#[derive(Clone, Debug, Serialize)]
pub struct AllocatorTrace {
    pub label: String,
    pub allocator: Allocator,
    /// Why the traced run failed, if it did.
    pub failure: Option<String>,
    /// The mechanism in one paragraph (None without call stacks).
    pub mechanism: Option<String>,
    /// The same paragraph in its parts (one per mechanism and kind of event).
    #[serde(skip)]
    pub mechanism_parts: Vec<String>,
    pub attributions: Vec<Attribution>,
    pub overhead: Overhead,
    /// Samples of each kind outside every iteration but inside the measured span (the
    /// observer's reads between iterations).
    pub between: BTreeMap<EventKind, u64>,
    /// Lines of perf script the lab did not understand.
    pub skipped_lines: usize,
    /// perf's word on lost samples.
    pub lost: Option<String>,
    /// Memory syscalls sampled against the worker's own count of them.
    pub sample_check: Option<String>,
    /// What its calls and faults did, from one more run recorded with their arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::model::evidence::Recorded>,
    #[serde(skip)]
    pub faults_folded: Vec<String>,
    #[serde(skip)]
    pub syscalls_folded: Vec<String>,
    #[serde(skip)]
    pub per_iteration: Vec<IterationEvents>,
    #[serde(skip)]
    pub record: Option<RunRecord>,
    /// The untraced processes' memory over their lives (sampled by the driver: peak,
    /// mean, end, …), medians with their intervals; null where not sampled.
    #[serde(default)]
    pub untraced_memory: crate::model::metric::MemoryFigures,
    #[serde(default)]
    pub untraced_memory_ci: crate::model::metric::MemoryIntervals,
}

impl AllocatorTrace {
    pub fn failed(label: &str, allocator: Allocator, why: String, overhead: Overhead) -> Self {
        AllocatorTrace {
            label: label.to_string(),
            allocator,
            failure: Some(why),
            mechanism: None,
            mechanism_parts: Vec::new(),
            attributions: Vec::new(),
            overhead,
            between: BTreeMap::new(),
            skipped_lines: 0,
            lost: None,
            sample_check: None,
            evidence: None,
            faults_folded: Vec::new(),
            syscalls_folded: Vec::new(),
            per_iteration: Vec::new(),
            record: None,
            untraced_memory: Default::default(),
            untraced_memory_ci: Default::default(),
        }
    }
}

/// `trace.json`.
#[derive(Clone, Debug, Serialize)]
pub struct TraceReport {
    pub schema: String,
    pub workload: Workload,
    pub variant: Variant,
    pub size: u64,
    pub iterations: u64,
    pub fault_period: u64,
    /// Why there are no call stacks (None: there are).
    pub attribution: Option<String>,
    /// What gave the memory syscalls their times: perf (with stacks), ptrace (without),
    /// None (the syscall columns are empty).
    pub syscalls_timed_by: Option<String>,
    pub processes: u32,
    pub order_seed: u64,
    /// True only when every allocator was traced.
    pub complete: bool,
    pub allocators: Vec<AllocatorTrace>,
}

pub use crate::model::spec::file_stem;

/// The timeline CSV header: one row per measured iteration, its counts the registry's
/// [`TIMELINE`] entries by stem.
pub fn timeline_header() -> String {
    let counts: Vec<&str> = TIMELINE.iter().map(|m| m.stem()).collect();
    format!(
        "iteration,start_ms,elapsed_ns,{},brk_delta_bytes,mmap_bytes,munmap_bytes,madvise_bytes,rss_bytes,heap_top_offset_bytes",
        counts.join(",")
    )
}

/// The timeline of one allocator as CSV; the syscall columns are empty without perf.
pub fn timeline_csv(t: &AllocatorTrace, with_syscalls: bool) -> String {
    let mut s = timeline_header();
    s.push('\n');
    let Some(r) = &t.record else { return s };
    let start = r.timeline.first().map_or(0, |x| x.start_ns);
    let top = r.timeline.first().map_or(0, |x| x.heap_top);
    for (i, x) in r.timeline.iter().enumerate() {
        let e = t.per_iteration.get(i).cloned().unwrap_or_default();
        // The worker's own counts of the iteration, and perf's syscalls in its span.
        let (own, events) = (x.figures(), e.figures());
        let counts: Vec<String> = TIMELINE
            .iter()
            .map(|m| {
                let v = match m.source {
                    Source::Syscalls if !with_syscalls => None,
                    Source::Syscalls => events[*m],
                    _ => own[*m],
                };
                v.map_or(String::new(), |v| v.to_string())
            })
            .collect();
        let bytes = if with_syscalls {
            format!(
                "{},{},{},{}",
                e.brk_delta_bytes, e.mmap_bytes, e.munmap_bytes, e.madvise_bytes
            )
        } else {
            ",,,".to_string()
        };
        let _ = writeln!(
            s,
            "{i},{:.6},{},{},{bytes},{},{}",
            (x.start_ns - start) as f64 / 1e6,
            x.elapsed_ns,
            counts.join(","),
            x.rss_bytes.map_or(String::new(), |v| v.to_string()),
            x.heap_top as i64 - top as i64
        );
    }
    s
}

/// A flame graph of folded stacks (inferno), or None without stacks.
pub(crate) fn flamegraph(lines: &[String], title: &str, count_name: &str) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    opt.count_name = count_name.to_string();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut out).ok()?;
    String::from_utf8(out).ok()
}

/// The differential flame graph from `before` to `after` (inferno): the shape is
/// `after`'s, red where `after` has more, blue where it has less.
fn differential(
    before: &[String],
    after: &[String],
    title: &str,
    count_name: &str,
) -> Option<String> {
    if before.is_empty() && after.is_empty() {
        return None;
    }
    let b = before.join("\n");
    let a = after.join("\n");
    let mut folded = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        b.as_bytes(),
        a.as_bytes(),
        &mut folded,
    )
    .ok()?;
    let text = String::from_utf8(folded).ok()?;
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    opt.count_name = count_name.to_string();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, text.lines(), &mut out).ok()?;
    String::from_utf8(out).ok()
}

fn whole(v: f64) -> String {
    group_thousands(v.round() as i64)
}

/// The timeline plots: latency, faults, memory syscalls and RSS per iteration, one line
/// per allocator.
fn plots(report: &TraceReport) -> Vec<(String, String)> {
    let traced: Vec<&AllocatorTrace> = report
        .allocators
        .iter()
        .filter(|t| t.record.is_some())
        .collect();
    let series = |f: &dyn Fn(&AllocatorTrace, usize) -> Option<f64>| -> Vec<Series> {
        traced
            .iter()
            .map(|t| {
                let n = t.record.as_ref().map_or(0, |r| r.timeline.len());
                Series {
                    label: t.label.clone(),
                    color: super::plots::color(t.allocator, &t.label, 0),
                    dash: None,
                    points: (0..n)
                        .filter_map(|i| f(t, i).map(|y| (i as f64, y)))
                        .collect(),
                }
            })
            .collect()
    };
    let x = || Axis {
        label: "iteration".into(),
        scale: Scale::Linear,
        format: whole,
    };
    let cell = format!(
        "{} {} at {} elements",
        report.workload,
        report.variant,
        group_thousands(report.size as i64)
    );
    let sample =
        |t: &AllocatorTrace, i: usize| t.record.as_ref().and_then(|r| r.timeline.get(i).copied());
    let mut out = vec![
        (
            "plots/latency.svg".to_string(),
            Chart {
                title: format!("Latency of every iteration, traced — {cell}"),
                x: x(),
                y: Axis {
                    label: "latency (ns, log)".into(),
                    scale: Scale::Log,
                    format: |v| fmt_ns(v),
                },
                series: series(&|t, i| sample(t, i).map(|s| s.elapsed_ns as f64)),
            },
        ),
        (
            "plots/faults.svg".to_string(),
            Chart {
                title: format!("Minor page faults per iteration — {cell}"),
                x: x(),
                y: Axis {
                    label: "faults (log; 0 on the bottom line)".into(),
                    scale: Scale::Log,
                    format: whole,
                },
                series: series(&|t, i| sample(t, i).and_then(|s| s.figures()[MINOR_FAULTS])),
            },
        ),
        (
            "plots/rss.svg".to_string(),
            Chart {
                title: format!("Resident set after each iteration — {cell}"),
                x: x(),
                y: Axis {
                    label: "RSS (MiB)".into(),
                    scale: Scale::Linear,
                    format: |v| format!("{v:.1}"),
                },
                series: series(&|t, i| {
                    sample(t, i).and_then(|s| s.rss_bytes.map(|b| b as f64 / 1048576.0))
                }),
            },
        ),
    ];
    if report.syscalls_timed_by.is_some() {
        out.push((
            "plots/syscalls.svg".to_string(),
            Chart {
                title: format!(
                    "Memory syscalls per iteration (brk, mmap, munmap, madvise, mremap) — {cell}"
                ),
                x: x(),
                y: Axis {
                    label: "calls".into(),
                    scale: Scale::Linear,
                    format: whole,
                },
                series: series(&|t, i| t.per_iteration.get(i).map(|e| e.syscalls() as f64)),
            },
        ));
    }
    out.into_iter()
        .map(|(name, chart)| (name, svg::render(&chart)))
        .collect()
}

/// The trace's answer, one item per allocator: its mechanism (or why its traced run
/// failed, or its faults without call stacks). The console, REPORT.md, report.html and
/// findings.json show these items.
pub fn answer(report: &TraceReport) -> Vec<crate::analysis::findings::Item> {
    report
        .allocators
        .iter()
        .filter_map(|t| {
            let faults = t
                .record
                .as_ref()
                .and_then(|r| r.per_iter[MINOR_FAULTS])
                .unwrap_or(0.0);
            crate::analysis::findings::trace_item(
                &t.label,
                t.failure.as_deref(),
                &t.mechanism_parts,
                Some(format!(
                    "{}: {} faults per iteration (no call stacks)",
                    t.label,
                    whole(faults)
                )),
                "iteration",
                &t.attributions,
            )
        })
        .collect()
}

/// The console's lines of `label`'s answer item: one per kind of event (the paragraph's
/// parts, each wrapped and keeping its "; ", so that the lines read back are the item's
/// words); none where the allocator has no item.
pub fn item_lines(items: &[crate::analysis::findings::Item], label: &str, width: usize) -> String {
    use crate::analysis::findings::Figures;
    let Some(Some(Figures::Trace(f))) = items
        .iter()
        .map(|i| &i.figures)
        .find(|f| matches!(f, Some(Figures::Trace(f)) if f.allocator == label))
    else {
        return String::new();
    };
    let mut s = String::new();
    for (i, part) in f.lines.iter().enumerate() {
        let first = if i == 0 { "" } else { "  " };
        let part = if i + 1 < f.lines.len() {
            format!("{part};")
        } else if f.failed.is_none() && !part.ends_with('.') {
            format!("{part}.")
        } else {
            part.to_string()
        };
        s.push_str(&wrap(&part, width, first, "    "));
    }
    s
}

/// A trace folder's page: its answer first (an incomplete trace says so), then
/// REPORT.md's other findings and the plots.
pub fn page(
    title: &str,
    md: &super::html::Report,
    drawings: Vec<(String, String)>,
    figures: Vec<super::html::Figure>,
    items: Vec<crate::analysis::findings::Item>,
    complete: bool,
    section: String,
) -> String {
    super::html::folder_page(
        title,
        md,
        drawings,
        figures,
        section,
        super::headlines::Answer {
            price: Vec::new(),
            items,
            more: 0,
            incomplete: (!complete).then(|| {
                "INCOMPLETE: not every allocator asked for was traced (interrupted, or a run failed)"
                    .to_string()
            }),
        },
    )
}

/// Writes every file of the trace into `folder`; returns the names written, in order
/// (REPORT.md and the console name only these).
pub fn save(
    folder: &Folder,
    report: &TraceReport,
    untraced: &[crate::model::record::Cell],
) -> Result<Vec<String>, ResultsError> {
    let with_stacks = report.attribution.is_none();
    let mut written = Vec::new();
    // The untraced processes' memory over time, one file per allocator, as a run folder
    // writes a cell's.
    for c in untraced {
        let runs: Vec<(String, &[crate::model::memory::MemorySample])> = c
            .records()
            .map(|(round, r)| ((round + 1).to_string(), &r.memory_timeline[..]))
            .collect();
        if let Some(text) = super::results::memory_csv("run", &runs) {
            let name = format!("memory/{}.csv", file_stem(&c.spec.allocator_label()));
            folder.text(&name, &text)?;
            written.push(name);
        }
    }
    for t in &report.allocators {
        let stem = file_stem(&t.label);
        if let Some(r) = &t.record {
            let run = format!("runs/{stem}.json");
            folder.json(&run, r)?;
            let timeline = format!("timeline/{stem}.csv");
            folder.text(
                &timeline,
                &timeline_csv(t, report.syscalls_timed_by.is_some()),
            )?;
            written.extend([run, timeline]);
        }
        if !with_stacks || t.record.is_none() {
            continue;
        }
        written.extend(save_stacks(
            folder,
            &t.label,
            &t.faults_folded,
            &t.syscalls_folded,
            report.fault_period,
        )?);
    }
    if let (true, Some((a, b))) = (with_stacks, first_two(report)) {
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
    if let Some(env) = report.allocators.iter().find_map(|t| t.record.as_ref()) {
        folder.json("env.json", &env.env)?;
        written.push("env.json".into());
    }
    folder.json("trace.json", report)?;
    written.push("trace.json".into());
    let items = answer(report);
    folder.json(
        "findings.json",
        &crate::analysis::findings::TraceFindings {
            schema: crate::analysis::findings::SCHEMA,
            traced: format!(
                "{} {} at {} elements",
                report.workload,
                report.variant,
                group_thousands(report.size as i64)
            ),
            variant: Some(report.variant),
            size: Some(report.size),
            complete: report.complete,
            answer: items.clone(),
        },
    )?;
    written.push("findings.json".into());
    let md = markdown(report, &written);
    folder.text("REPORT.md", &md.md)?;
    folder.text(
        "report.html",
        &page(
            "alloclab trace",
            &md,
            drawings,
            super::html::cell_memory_figures(untraced),
            items,
            report.complete,
            String::new(),
        ),
    )?;
    written.extend(["REPORT.md".into(), "report.html".into()]);
    // The folder's guide to its files and columns, where the lab wrote it.
    if folder.holds(super::folder::GUIDE_FILE) {
        written.push(super::folder::GUIDE_FILE.into());
    }
    Ok(written)
}

/// The files of a folder as the console lists them: REPORT.md and report.html first,
/// then each other top-level file by name and each folder's files as `folder/*.ext`
/// (with how many), in the order written — only what `written` holds.
pub(crate) fn files_list(written: &[String]) -> String {
    let mut groups: Vec<(String, usize)> = Vec::new();
    let mut names: Vec<&String> = written.iter().collect();
    // The reports first.
    names.sort_by_key(|n| !(n.as_str() == "REPORT.md" || n.as_str() == "report.html"));
    for name in names {
        let group = match name.split_once('/') {
            Some((dir, file)) => {
                let ext = file.rsplit_once('.').map_or("", |(_, e)| e);
                format!("{dir}/*.{ext}")
            }
            None => name.clone(),
        };
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, n)) => *n += 1,
            None => groups.push((group, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(g, n)| {
            if g.contains('*') {
                format!("{g} ({n})")
            } else {
                g
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One allocator's folded stacks and flame graphs.
/// Returns the names written: a flame graph only where there were samples.
pub(crate) fn save_stacks(
    folder: &Folder,
    label: &str,
    faults: &[String],
    syscalls: &[String],
    fault_period: u64,
) -> Result<Vec<String>, ResultsError> {
    let stem = file_stem(label);
    let mut written = vec![
        format!("stacks/{stem}.faults.folded"),
        format!("stacks/{stem}.syscalls.folded"),
    ];
    folder.text(&written[0], &lines(faults))?;
    folder.text(&written[1], &lines(syscalls))?;
    if let Some(svg) = flamegraph(
        faults,
        &format!("{label}: user page faults by call stack (1 sample = {fault_period} faults)"),
        "faults",
    ) {
        let name = format!("flamegraphs/{stem}.faults.svg");
        folder.text(&name, &svg)?;
        written.push(name);
    }
    if let Some(svg) = flamegraph(
        syscalls,
        &format!("{label}: memory syscalls by call stack (every call)"),
        "calls",
    ) {
        let name = format!("flamegraphs/{stem}.syscalls.svg");
        folder.text(&name, &svg)?;
        written.push(name);
    }
    Ok(written)
}

/// The differential flame graphs from `a` to `b` (label, folded faults, folded syscalls).
pub(crate) fn save_differential(
    folder: &Folder,
    a: (&str, &[String], &[String]),
    b: (&str, &[String], &[String]),
) -> Result<Vec<String>, ResultsError> {
    let mut written = Vec::new();
    let name = format!("{}-vs-{}", file_stem(a.0), file_stem(b.0));
    for (what, before, after, unit) in [
        ("faults", a.1, b.1, "faults"),
        ("syscalls", a.2, b.2, "calls"),
    ] {
        if let Some(svg) = differential(
            before,
            after,
            &format!(
                "{what}: {} → {} (shape: {}; red: more under {}, blue: fewer)",
                a.0, b.0, b.0, b.0
            ),
            unit,
        ) {
            let file = format!("flamegraphs/diff/{name}.{what}.svg");
            folder.text(&file, &svg)?;
            written.push(file);
        }
    }
    Ok(written)
}

/// REPORT.md's links to the flame graphs of `labels` (the traced allocators) and to the
/// differential view of the first two: only to those `written`.
pub(crate) fn stack_links(
    md: &mut String,
    found: &mut Vec<String>,
    labels: &[&str],
    written: &[String],
) {
    let link = |text: &str, file: String| -> Option<String> {
        written.contains(&file).then(|| format!("[{text}]({file})"))
    };
    for label in labels {
        let stem = file_stem(label);
        let graphs: Vec<String> = [
            link("faults", format!("flamegraphs/{stem}.faults.svg")),
            link(
                "memory syscalls",
                format!("flamegraphs/{stem}.syscalls.svg"),
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        let graphs = if graphs.is_empty() {
            "no flame graph (no samples)".to_string()
        } else {
            graphs.join(" · ")
        };
        let folded = if written.contains(&format!("stacks/{stem}.faults.folded")) {
            format!(" · folded: `stacks/{stem}.*.folded`")
        } else {
            String::new()
        };
        super::html::bullet(md, found, "", &format!("{label}: {graphs}{folded}"));
    }
    if let [a, b, ..] = labels {
        let name = format!("{}-vs-{}", file_stem(a), file_stem(b));
        let graphs: Vec<String> = [
            link("faults", format!("flamegraphs/diff/{name}.faults.svg")),
            link(
                "memory syscalls",
                format!("flamegraphs/diff/{name}.syscalls.svg"),
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !graphs.is_empty() {
            super::html::bullet(
                md,
                found,
                "",
                &format!(
                    "{a} → {b}: {} (differential: the shape is {b}'s, red where it has more)",
                    graphs.join(" · ")
                ),
            );
        }
    }
}

fn first_two(report: &TraceReport) -> Option<(&AllocatorTrace, &AllocatorTrace)> {
    let mut ok = report.allocators.iter().filter(|t| t.record.is_some());
    Some((ok.next()?, ok.next()?))
}

pub(crate) fn lines(v: &[String]) -> String {
    let mut s = v.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// "traced median 9.1 ms, 1.04x the untraced processes' (8.8 ms [8.6 ms, 9.0 ms], 6
/// processes; 1.01x–1.06x over that interval)".
fn overhead_text(o: &Overhead) -> String {
    match (o.traced_median_ns, o.untraced_median_ns, o.ratio) {
        (Some(t), Some(u), Some(r)) => {
            let ci = match (o.untraced_ci_ns, o.ratio_range, o.untraced_ci_coverage) {
                (Some((lo, hi)), Some((rlo, rhi)), Some(cov)) => format!(
                    " [{}, {}] ({:.1} % interval)); {:.2}x–{:.2}x over that interval",
                    fmt_ns(lo),
                    fmt_ns(hi),
                    100.0 * cov,
                    rlo,
                    rhi
                ),
                _ => ")".to_string(),
            };
            format!(
                "traced median iteration {}, {r:.2}x the untraced processes' median ({} of {} process(es){ci}",
                fmt_ns(t),
                fmt_ns(u),
                o.untraced_processes
            )
        }
        (Some(t), _, _) => format!(
            "traced median iteration {} (no untraced processes to state it against)",
            fmt_ns(t)
        ),
        _ => "no traced iterations".to_string(),
    }
}

/// REPORT.md.
pub fn markdown(report: &TraceReport, written: &[String]) -> super::html::Report {
    use super::html::bullet;
    let mut md = String::new();
    let mut found = Vec::new();
    let _ = writeln!(
        md,
        "# Trace: {} {} at {} elements\n",
        report.workload,
        report.variant,
        group_thousands(report.size as i64)
    );
    if !report.complete {
        let _ = writeln!(
            md,
            "> **Incomplete:** {} of the allocators asked for were traced (interrupted, or a run failed).\n",
            report.allocators.iter().filter(|t| t.record.is_some()).count()
        );
    }
    let about = format!(
        "One traced worker process per allocator: {} measured iterations, each timed alone and kept (latency, minor faults from getrusage, RSS, heap top). {}",
        report.iterations,
        match &report.attribution {
            None => format!("Under `perf record`: every brk, mmap, munmap, madvise and mremap with its user call stack, and one page fault in {} with its stack (DWARF unwinding), placed into the iterations by their CLOCK_MONOTONIC timestamps.", report.fault_period),
            Some(why) => format!(
                "**No call stacks:** {why}.{}",
                if report.syscalls_timed_by.as_deref() == Some("ptrace") {
                    " The memory syscalls are timed by the ptrace tracer instead (each call stops the worker for a round trip through the tracer), and placed into the iterations by the time it saw them."
                } else {
                    ""
                }
            ),
        }
    );
    let _ = writeln!(md, "{about}\n");
    let _ = writeln!(md, "## Mechanism\n");
    for item in answer(report) {
        let _ = writeln!(md, "* {}", item.text);
    }
    // The samples checked against each worker's own counts, named per allocator (after
    // the answer, not as a part of its last item).
    let checks: Vec<String> = report
        .allocators
        .iter()
        .filter_map(|t| Some(format!("{}: {}", t.label, t.sample_check.as_ref()?)))
        .collect();
    if !checks.is_empty() {
        let heading = "The samples against the workers' own counts:";
        let _ = writeln!(md, "\n**{heading}**\n");
        for c in &checks {
            bullet(&mut md, &mut found, heading, c);
        }
    }
    let _ = writeln!(md, "\n## What tracing cost\n");
    for t in &report.allocators {
        let line = format!("{}: {}", t.label, overhead_text(&t.overhead));
        bullet(&mut md, &mut found, "", &line);
    }
    let _ = writeln!(
        md,
        "\nThe untraced processes ran compare's budget in interleaved rounds (order seed {}); the traced counts are never mixed into compare's figures.\n",
        report.order_seed
    );
    let memory: Vec<String> = report
        .allocators
        .iter()
        .filter_map(|t| {
            let text =
                crate::analysis::command::memory_text(&t.untraced_memory, &t.untraced_memory_ci)?;
            Some(format!("{}: {text}", t.label))
        })
        .collect();
    if !memory.is_empty() {
        let _ = writeln!(
            md,
            "## Memory over a process's life\n\nThe untraced processes, sampled by the driver: medians over the processes with their intervals.\n"
        );
        for l in &memory {
            bullet(&mut md, &mut found, "", l);
        }
        let _ = writeln!(
            md,
            "\nAs data: `memory/<allocator>.csv`, every sample of every untraced process; the traced run's RSS per iteration is in the timeline below.\n"
        );
    }
    let _ = writeln!(md, "## Timeline\n");
    for name in ["latency", "faults", "syscalls", "rss"] {
        if written.contains(&format!("plots/{name}.svg")) {
            let _ = writeln!(md, "![{name}](plots/{name}.svg)\n");
        }
    }
    let _ = writeln!(
        md,
        "Per iteration, as data: `timeline/<allocator>.csv` ({}).\n",
        timeline_header()
    );
    if report.attribution.is_none() {
        let _ = writeln!(md, "## Call stacks\n");
        let labels: Vec<&str> = report
            .allocators
            .iter()
            .filter(|t| t.record.is_some())
            .map(|t| t.label.as_str())
            .collect();
        stack_links(&mut md, &mut found, &labels, written);
        let _ = writeln!(
            md,
            "\n(A flame graph is written only where there were samples: an allocator without memory syscalls has no syscall graph. With `--keep-perf-data`, perf's own files stay in `perf/<allocator>.data`, for `perf report -i`.)"
        );
    }
    super::html::Report {
        md,
        environment: vec![about.replace('`', "").replace("**", "")],
        findings: found,
    }
}

/// What the console shows: the mechanism lines, the cost of tracing, where the files are.
pub fn console(report: &TraceReport, out: &Path, written: &[String]) -> String {
    let width = crate::fmt::screen_width();
    let mut s = wrap(
        &format!(
            "{} {} at {} elements, {} traced iterations per allocator",
            report.workload,
            report.variant,
            group_thousands(report.size as i64),
            report.iterations
        ),
        width,
        "",
        "  ",
    );
    if let Some(why) = &report.attribution {
        s.push_str(&wrap(&format!("no call stacks: {why}"), width, "", "  "));
    }
    let items = answer(report);
    for t in &report.allocators {
        s.push_str(&item_lines(&items, &t.label, width));
        s.push_str(&wrap(&overhead_text(&t.overhead), width, "  ", "    "));
        if let Some(l) = &t.lost {
            s.push_str(&wrap(&format!("perf: {l}"), width, "  ", "    "));
        }
        if let Some(c) = &t.sample_check {
            s.push_str(&wrap(c, width, "  ", "    "));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_flame_graphs_that_were_written_are_linked() {
        let written: Vec<String> = [
            "stacks/system.faults.folded",
            "stacks/system.syscalls.folded",
            "flamegraphs/system.faults.svg",
            "flamegraphs/system.syscalls.svg",
            "stacks/mimalloc.faults.folded",
            "stacks/mimalloc.syscalls.folded",
            "flamegraphs/diff/system-vs-mimalloc.syscalls.svg",
        ]
        .map(String::from)
        .to_vec();
        let mut md = String::new();
        stack_links(&mut md, &mut Vec::new(), &["system", "mimalloc"], &written);
        let links: Vec<&str> = md
            .split("](")
            .skip(1)
            .map(|r| r.split(')').next().unwrap())
            .collect();
        assert_eq!(links.len(), 3, "{md}");
        for l in links {
            assert!(written.iter().any(|w| w == l), "{l} was not written: {md}");
        }
        assert!(md.contains("mimalloc: no flame graph (no samples)"), "{md}");
    }

    #[test]
    fn the_console_lists_what_was_written() {
        let written: Vec<String> = [
            "timeline/system.csv",
            "plots/latency.svg",
            "plots/rss.svg",
            "trace.json",
            "REPORT.md",
            "report.html",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            files_list(&written),
            "REPORT.md, report.html, timeline/*.csv (1), plots/*.svg (2), trace.json"
        );
    }
}
