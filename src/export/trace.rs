//! The files of `alloclab trace`, of a built-in cell or of a command (`trace -- CMD`),
//! from one report: `trace.json` (schema `alloclab.trace/1` for a cell,
//! `alloclab.trace-command/1` for a command), each allocator's timeline (`timeline/`:
//! per iteration of a cell, per bin of time since a command's exec), a cell's worker
//! records (`runs/`), a command's every memory syscall with its time, size and cause
//! (`events/`), folded stacks, flame graphs and the differential view of the first two
//! allocators (`stacks/`, `flamegraphs/`, inferno), plots, REPORT.md, report.html,
//! findings.json and the console summary. A Python command's view by line is in
//! [`super::trace_python`].

use super::flame::{flamegraph, lines};
use super::folder::Folder;
use super::results::ResultsError;
use super::svg::{self, Axis, Chart, Scale, Series};
use super::trace_python as python;
use crate::analysis::python::PythonView;
use crate::analysis::trace::{Attribution, Bin, CountCheck, EventKind, IterationEvents};
use crate::fmt::{fmt_ns, group_thousands, human_bytes, wrap};
use crate::model::metric::{
    Metric, RunFigures, Source, MINOR_FAULTS, RUN_METRICS, RUN_MINOR_FAULTS, TIMELINE,
};
use crate::model::record::RunRecord;
use crate::model::spec::{Allocator, Variant, Workload};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

pub use crate::model::spec::file_stem;

/// trace.json of a built-in cell.
pub const SCHEMA: &str = "alloclab.trace/1";
/// trace.json of a command.
pub const COMMAND_SCHEMA: &str = "alloclab.trace-command/1";

/// `trace.json`: what was traced, how, and one trace per allocator.
#[derive(Clone, Debug, Serialize)]
pub struct TraceReport {
    pub schema: String,
    #[serde(flatten)]
    pub subject: Subject,
    pub fault_period: u64,
    /// What gave the memory syscalls their times: perf (with stacks), ptrace (without),
    /// None (a cell's syscall columns are empty).
    pub syscalls_timed_by: Option<String>,
    pub order_seed: u64,
    /// True only when every allocator was traced (and a command's untraced runs are all
    /// there).
    pub complete: bool,
    pub allocators: Vec<AllocatorTrace>,
}

/// What was traced.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Subject {
    /// One built-in cell: a worker per allocator, every iteration kept.
    Cell {
        workload: Workload,
        variant: Variant,
        size: u64,
        iterations: u64,
        /// Untraced processes per allocator.
        processes: u32,
        /// Why there are no call stacks (None: there are).
        attribution: Option<String>,
    },
    /// A user's command: one run per allocator, over time from its exec.
    Command {
        command: Vec<String>,
        /// A Python command: the interpreter and how its lines were recorded, or why not.
        python: Option<String>,
        /// What the timeline lacks on this machine, and why (a tracepoint not in this
        /// kernel, no perf events).
        missing: Vec<String>,
        /// Untraced runs per allocator.
        runs: u32,
    },
}

/// One allocator's trace.
#[derive(Clone, Debug, Serialize)]
pub struct AllocatorTrace {
    pub label: String,
    pub allocator: Allocator,
    /// Why the traced run failed, if it did.
    pub failure: Option<String>,
    /// The mechanism in one paragraph (None without call stacks or times).
    pub mechanism: Option<String>,
    /// The same paragraph in its parts (one per mechanism and kind of event).
    #[serde(skip)]
    pub mechanism_parts: Vec<String>,
    pub attributions: Vec<Attribution>,
    /// Lines of perf script the lab did not understand.
    pub skipped_lines: usize,
    /// perf's word on lost samples.
    pub lost: Option<String>,
    /// What its calls and faults did, from one more run recorded with their arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::model::evidence::Recorded>,
    /// What a traced cell or command has of its own.
    #[serde(flatten)]
    pub run: TracedRun,
    #[serde(skip)]
    pub faults_folded: Vec<String>,
    #[serde(skip)]
    pub syscalls_folded: Vec<String>,
}

/// A traced run's own figures: a cell's per iteration, a command's over time.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum TracedRun {
    Cell(Box<CellRun>),
    Command(Box<CommandRun>),
}

/// A traced worker of a built-in cell.
#[derive(Clone, Debug, Serialize)]
pub struct CellRun {
    pub overhead: Overhead,
    /// Samples of each kind outside every iteration but inside the measured span (the
    /// observer's reads between iterations).
    pub between: BTreeMap<EventKind, u64>,
    /// Memory syscalls sampled against the worker's own count of them.
    pub sample_check: Option<String>,
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

impl CellRun {
    /// A worker not traced (yet), stated against its untraced processes.
    pub fn new(overhead: Overhead) -> Self {
        CellRun {
            overhead,
            between: BTreeMap::new(),
            sample_check: None,
            per_iteration: Vec::new(),
            record: None,
            untraced_memory: Default::default(),
            untraced_memory_ci: Default::default(),
        }
    }
}

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

/// One traced run of a command.
#[derive(Clone, Debug, Serialize)]
pub struct CommandRun {
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
    /// The recorded memory syscalls against the lab's counters of the same run.
    pub count_check: CountCheck,
    /// A CPython command's events by Python line (Err: why there are none); in JSON the
    /// view, or `{"missing": why}`, or null for a command that is not a Python program.
    #[serde(serialize_with = "python_json")]
    pub python: Option<Result<PythonView, String>>,
    #[serde(skip)]
    pub bins: Vec<Bin>,
    /// `time_ms,pid,call,bytes,advice,cause` rows.
    #[serde(skip)]
    pub syscall_rows: Vec<String>,
}

impl CommandRun {
    /// A run not traced (yet), stated against its untraced runs.
    pub fn new(untraced: Untraced) -> Self {
        CommandRun {
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
            count_check: CountCheck::default(),
            python: None,
            bins: Vec::new(),
            syscall_rows: Vec::new(),
        }
    }
}

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

impl AllocatorTrace {
    /// An allocator whose traced run failed, and why.
    pub fn failed(label: &str, allocator: Allocator, why: String, run: TracedRun) -> Self {
        AllocatorTrace {
            label: label.to_string(),
            allocator,
            failure: Some(why),
            mechanism: None,
            mechanism_parts: Vec::new(),
            attributions: Vec::new(),
            skipped_lines: 0,
            lost: None,
            evidence: None,
            run,
            faults_folded: Vec::new(),
            syscalls_folded: Vec::new(),
        }
    }

    /// Whether its traced run finished and was read.
    pub fn traced(&self) -> bool {
        self.failure.is_none()
    }

    pub fn cell(&self) -> Option<&CellRun> {
        match &self.run {
            TracedRun::Cell(c) => Some(c),
            TracedRun::Command(_) => None,
        }
    }

    pub fn command(&self) -> Option<&CommandRun> {
        match &self.run {
            TracedRun::Command(c) => Some(c),
            TracedRun::Cell(_) => None,
        }
    }

    /// The untraced processes' or runs' memory over their lives.
    fn untraced_memory(
        &self,
    ) -> (
        &crate::model::metric::MemoryFigures,
        &crate::model::metric::MemoryIntervals,
    ) {
        match &self.run {
            TracedRun::Cell(c) => (&c.untraced_memory, &c.untraced_memory_ci),
            TracedRun::Command(c) => (&c.untraced.memory, &c.untraced.memory_ci),
        }
    }

    /// The recorded calls against an independent count of them: a cell's samples against
    /// the worker's own counters, a command's against the lab's counters beside perf.
    fn check(&self) -> Option<&str> {
        match &self.run {
            TracedRun::Cell(c) => c.sample_check.as_deref(),
            TracedRun::Command(c) => Some(&c.count_check.text),
        }
    }

    /// A Python command's view by line, or why there is none.
    fn python(&self) -> Option<&Result<PythonView, String>> {
        self.command().and_then(|c| c.python.as_ref())
    }
}

impl TraceReport {
    /// What was traced, in a few words: "array-temp out-of-place at 1,000,000 elements",
    /// or the command.
    pub fn traced(&self) -> String {
        match &self.subject {
            Subject::Cell {
                workload,
                variant,
                size,
                ..
            } => format!(
                "{workload} {variant} at {} elements",
                group_thousands(*size as i64)
            ),
            Subject::Command { command, .. } => command.join(" "),
        }
    }

    /// Whether the calls came with their call stacks (under perf).
    pub fn stacks(&self) -> bool {
        self.syscalls_timed_by.as_deref() == Some("perf")
    }

    fn is_command(&self) -> bool {
        matches!(self.subject, Subject::Command { .. })
    }

    fn traced_allocators(&self) -> impl Iterator<Item = &AllocatorTrace> {
        self.allocators.iter().filter(|t| t.traced())
    }

    /// The first two allocators traced: the differential view's.
    fn first_two(&self) -> Option<(&AllocatorTrace, &AllocatorTrace)> {
        let mut ok = self.traced_allocators();
        Some((ok.next()?, ok.next()?))
    }

    /// A Python command's traced allocators with a view by line, and their views.
    fn python_views(&self) -> (Vec<&str>, Vec<&PythonView>) {
        self.traced_allocators()
            .filter_map(|t| match t.python() {
                Some(Ok(v)) => Some((t.label.as_str(), v)),
                _ => None,
            })
            .unzip()
    }
}

/// The untraced side of a trace as it was run: a cell's untraced processes (interleaved
/// rounds), or a command's untraced runs (exec's record; None without any).
pub enum UntracedRuns<'a> {
    Cells(&'a [crate::model::record::Cell]),
    Command(Option<&'a crate::model::command::ExecRecord>),
}

impl UntracedRuns<'_> {
    /// Every memory sample of every untraced process or run, one file per allocator.
    fn memory_files(&self) -> Vec<(String, String)> {
        let file = |label: &str, runs: &[(String, &[crate::model::memory::MemorySample])]| {
            super::results::memory_csv("run", runs)
                .map(|text| (format!("memory/{}.csv", file_stem(label)), text))
        };
        match self {
            UntracedRuns::Cells(cells) => cells
                .iter()
                .filter_map(|c| {
                    let runs: Vec<(String, &[crate::model::memory::MemorySample])> = c
                        .records()
                        .map(|(round, r)| ((round + 1).to_string(), &r.memory_timeline[..]))
                        .collect();
                    file(&c.spec.allocator_label(), &runs)
                })
                .collect(),
            UntracedRuns::Command(record) => record
                .iter()
                .flat_map(|r| &r.allocators)
                .filter_map(|a| {
                    let runs: Vec<(String, &[crate::model::memory::MemorySample])> = a
                        .runs
                        .iter()
                        .map(|r| (r.round.to_string(), &r.memory[..]))
                        .collect();
                    file(&a.allocator, &runs)
                })
                .collect(),
        }
    }

    /// The page's figures of that memory.
    fn figures(&self) -> Vec<super::html::Figure> {
        match self {
            UntracedRuns::Cells(cells) => super::html::cell_memory_figures(cells),
            UntracedRuns::Command(record) => record
                .and_then(super::html::exec_memory_figure)
                .into_iter()
                .collect(),
        }
    }
}

/// The timeline CSV header of a cell: one row per measured iteration, its counts the
/// registry's [`TIMELINE`] entries by stem.
pub fn timeline_header() -> String {
    let counts: Vec<&str> = TIMELINE.iter().map(|m| m.stem()).collect();
    format!(
        "iteration,start_ms,elapsed_ns,{},brk_delta_bytes,mmap_bytes,munmap_bytes,madvise_bytes,rss_bytes,heap_top_offset_bytes",
        counts.join(",")
    )
}

/// The timeline CSV header of a command: one row per bin of time since its exec.
pub const COMMAND_TIMELINE_HEADER: &str = "start_ms,faults,brk,mmap,munmap,madvise,mremap,brk_delta_bytes,mmap_bytes,munmap_bytes,madvise_bytes,rss_bytes,heap_top_offset_bytes,python_line";
/// A command's events CSV header: one row per memory syscall.
pub const EVENTS_HEADER: &str = "time_ms,pid,call,bytes,advice,cause";

/// One allocator's timeline as CSV: per iteration of a cell (the syscall columns empty
/// where nothing timed them), per bin of a command.
pub fn timeline_csv(t: &AllocatorTrace, report: &TraceReport) -> String {
    match &t.run {
        TracedRun::Cell(c) => cell_timeline_csv(c, report.syscalls_timed_by.is_some()),
        TracedRun::Command(c) => command_timeline_csv(c),
    }
}

fn cell_timeline_csv(t: &CellRun, with_syscalls: bool) -> String {
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

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn command_timeline_csv(t: &CommandRun) -> String {
    let mut s = format!("{COMMAND_TIMELINE_HEADER}\n");
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

/// The timeline plots, one line per traced allocator: a cell's per iteration (latency,
/// faults, memory syscalls, RSS), a command's over time since its exec (faults, memory
/// syscalls, RSS, heap top).
fn plots(report: &TraceReport) -> Vec<(String, String)> {
    let traced: Vec<&AllocatorTrace> = report.traced_allocators().collect();
    let charts = if report.is_command() {
        command_plots(report, &traced)
    } else {
        cell_plots(report, &traced)
    };
    charts
        .into_iter()
        .map(|(name, chart)| (format!("plots/{name}.svg"), svg::render(&chart)))
        .collect()
}

/// One series per allocator of the points `f` gives it.
fn series_of(
    traced: &[&AllocatorTrace],
    f: &dyn Fn(&AllocatorTrace) -> Vec<(f64, f64)>,
) -> Vec<Series> {
    traced
        .iter()
        .map(|t| Series {
            label: t.label.clone(),
            color: super::plots::color(t.allocator, &t.label, 0),
            dash: None,
            points: f(t),
        })
        .collect()
}

/// A traced worker's iterations.
fn cell_samples(t: &AllocatorTrace) -> &[crate::model::record::IterationSample] {
    t.cell()
        .and_then(|c| c.record.as_ref())
        .map_or(&[], |r| &r.timeline[..])
}

fn cell_plots(report: &TraceReport, traced: &[&AllocatorTrace]) -> Vec<(&'static str, Chart)> {
    let per_iteration = |f: &dyn Fn(&crate::model::record::IterationSample) -> Option<f64>| {
        series_of(traced, &|t| {
            cell_samples(t)
                .iter()
                .enumerate()
                .filter_map(|(i, s)| f(s).map(|y| (i as f64, y)))
                .collect()
        })
    };
    let x = || Axis {
        label: "iteration".into(),
        scale: Scale::Linear,
        format: whole,
    };
    let cell = report.traced();
    let mut out = vec![
        (
            "latency",
            Chart {
                title: format!("Latency of every iteration, traced — {cell}"),
                x: x(),
                y: Axis {
                    label: "latency (ns, log)".into(),
                    scale: Scale::Log,
                    format: |v| fmt_ns(v),
                },
                series: per_iteration(&|s| Some(s.elapsed_ns as f64)),
            },
        ),
        (
            "faults",
            Chart {
                title: format!("Minor page faults per iteration — {cell}"),
                x: x(),
                y: Axis {
                    label: "faults (log; 0 on the bottom line)".into(),
                    scale: Scale::Log,
                    format: whole,
                },
                series: per_iteration(&|s| s.figures()[MINOR_FAULTS]),
            },
        ),
        (
            "rss",
            Chart {
                title: format!("Resident set after each iteration — {cell}"),
                x: x(),
                y: Axis {
                    label: "RSS (MiB)".into(),
                    scale: Scale::Linear,
                    format: |v| format!("{v:.1}"),
                },
                series: per_iteration(&|s| s.rss_bytes.map(|b| b as f64 / 1048576.0)),
            },
        ),
    ];
    if report.syscalls_timed_by.is_some() {
        out.push((
            "syscalls",
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
                series: series_of(traced, &|t| {
                    t.cell().map_or_else(Vec::new, |c| {
                        c.per_iteration
                            .iter()
                            .enumerate()
                            .map(|(i, e)| (i as f64, e.syscalls() as f64))
                            .collect()
                    })
                }),
            },
        ));
    }
    out
}

/// The command for a chart's title: the program's file name and its arguments, at most
/// 40 characters.
fn short_command(command: &[String]) -> String {
    shortened(command, 40)
}

/// The program's file name and its arguments, at most `most` characters.
fn shortened(command: &[String], most: usize) -> String {
    let mut words: Vec<String> = command.to_vec();
    if let Some(first) = words.first_mut() {
        if let Some(name) = Path::new(first.as_str()).file_name() {
            *first = name.to_string_lossy().into_owned();
        }
    }
    let s = words.join(" ");
    if s.chars().count() > most {
        format!("{}…", s.chars().take(most - 1).collect::<String>())
    } else {
        s
    }
}

fn command_plots(report: &TraceReport, traced: &[&AllocatorTrace]) -> Vec<(&'static str, Chart)> {
    let runs: Vec<&CommandRun> = traced.iter().filter_map(|t| t.command()).collect();
    let per_bin = |f: &dyn Fn(&Bin) -> Option<f64>| {
        series_of(traced, &|t| {
            t.command().map_or_else(Vec::new, |c| {
                c.bins
                    .iter()
                    .filter_map(|b| f(b).map(|y| (b.start_ns as f64 / 1e6, y)))
                    .collect()
            })
        })
    };
    let x = || Axis {
        label: "ms since the exec".into(),
        scale: Scale::Linear,
        format: |v| format!("{v:.0}"),
    };
    let bin = runs
        .iter()
        .map(|t| t.bin_ns)
        .max()
        .map_or(String::new(), |b| format!(" per {}", fmt_ns(b as f64)));
    let what = match &report.subject {
        Subject::Command { command, .. } => short_command(command),
        Subject::Cell { .. } => report.traced(),
    };
    let mut out = vec![];
    if runs.iter().any(|t| t.faults.is_some()) {
        out.push((
            "faults",
            Chart {
                title: format!("User page faults{bin} — {what}"),
                x: x(),
                y: Axis {
                    label: "faults".into(),
                    scale: Scale::Linear,
                    format: whole,
                },
                series: per_bin(&|b| b.faults.map(|f| f as f64)),
            },
        ));
    }
    out.push((
        "syscalls",
        Chart {
            title: format!("Memory syscalls{bin} — {what}"),
            x: x(),
            y: Axis {
                label: "brk, mmap, munmap, madvise, mremap".into(),
                scale: Scale::Linear,
                format: whole,
            },
            series: per_bin(&|b| Some(b.events.syscalls() as f64)),
        },
    ));
    if runs.iter().any(|t| t.peak_rss_bytes.is_some()) {
        out.push((
            "rss",
            Chart {
                title: format!("RSS of the command's process — {what}"),
                x: x(),
                y: Axis {
                    label: "RSS (MiB)".into(),
                    scale: Scale::Linear,
                    format: |v| format!("{v:.1}"),
                },
                series: per_bin(&|b| b.rss_bytes.map(|r| r as f64 / 1048576.0)),
            },
        ));
    }
    out.push((
        "heap-top",
        Chart {
            title: format!("Heap top against the first break — {what}"),
            x: x(),
            y: Axis {
                label: "MiB".into(),
                scale: Scale::Linear,
                format: |v| format!("{v:.1}"),
            },
            series: per_bin(&|b| b.heap_top_offset_bytes.map(|h| h as f64 / 1048576.0)),
        },
    ));
    out
}

/// The trace's answer, one item per allocator: its mechanism, or why its traced run
/// failed, or (a cell traced without times) its faults without call stacks. The console,
/// REPORT.md, report.html and findings.json show these items.
pub fn answer(report: &TraceReport) -> Vec<crate::analysis::findings::Item> {
    let per = if report.is_command() {
        "run"
    } else {
        "iteration"
    };
    report
        .allocators
        .iter()
        .filter_map(|t| {
            let without = t.cell().map(|c| {
                let faults = c
                    .record
                    .as_ref()
                    .and_then(|r| r.per_iter[MINOR_FAULTS])
                    .unwrap_or(0.0);
                format!(
                    "{}: {} faults per iteration (no call stacks)",
                    t.label,
                    whole(faults)
                )
            });
            crate::analysis::findings::trace_item(
                &t.label,
                t.failure.as_deref(),
                &t.mechanism_parts,
                without,
                per,
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

/// What tracing cost one allocator: its traced run against its untraced processes or
/// runs.
fn cost_text(t: &AllocatorTrace, report: &TraceReport) -> String {
    match &t.run {
        TracedRun::Cell(c) => overhead_text(&c.overhead),
        TracedRun::Command(c) => command_cost_text(c, report),
    }
}

/// "traced median iteration 9.1 ms, 1.04x the untraced processes' median (8.8 ms of 6
/// processes [8.6 ms, 9.0 ms] (96.9 % interval); 1.01x–1.06x over it)".
fn overhead_text(o: &Overhead) -> String {
    use crate::analysis::command::UntracedTimes;
    match (o.traced_median_ns, o.untraced_median_ns) {
        (Some(t), Some(u)) if u > 0.0 => {
            let against = UntracedTimes {
                median_ns: u,
                ci: o
                    .untraced_ci_ns
                    .zip(o.untraced_ci_coverage)
                    .map(|((lo, hi), c)| (lo, hi, c)),
                n: o.untraced_processes,
            };
            format!(
                "traced median iteration {}, {}",
                fmt_ns(t),
                against.text(t, UntracedTimes::PROCESSES)
            )
        }
        (Some(t), _) => format!(
            "traced median iteration {} (no untraced processes to state it against)",
            fmt_ns(t)
        ),
        _ => "no traced iterations".to_string(),
    }
}

/// "traced run 412 ms from exec to exit, 1.85x the untraced runs' median wall time (223 ms
/// of 5 runs [219 ms, 230 ms] (96.9 % interval); 1.79x–1.88x over it); traced counts:
/// 77,881 user faults (untraced runs' median 77,850 minor faults), 81 memory syscalls
/// (untraced runs' median 81)".
fn command_cost_text(t: &CommandRun, report: &TraceReport) -> String {
    let u = &t.untraced;
    let Some(d) = t.duration_ns else {
        return "no traced duration (perf saw no exit)".into();
    };
    let span = if report.stacks() {
        "from exec to exit"
    } else {
        "from launch to end, under ptrace"
    };
    let mut s = format!("traced run {} {span}", fmt_ns(d as f64));
    use crate::analysis::command::UntracedTimes;
    match u.wall_median_ns.filter(|m| *m > 0.0) {
        Some(m) => {
            let against = UntracedTimes {
                median_ns: m,
                ci: u
                    .wall_ci_ns
                    .zip(u.wall_ci_coverage)
                    .map(|((lo, hi), c)| (lo, hi, c)),
                n: u.runs,
            };
            let _ = write!(s, ", {}", against.text(d as f64, UntracedTimes::RUNS));
        }
        None => s.push_str(" (no untraced runs to state it against)"),
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

/// A trace folder's page: its answer first (an incomplete trace says so), then
/// REPORT.md's other findings, the plots and (a Python command) the listing by line.
fn page(
    report: &TraceReport,
    md: &super::html::Report,
    drawings: Vec<(String, String)>,
    figures: Vec<super::html::Figure>,
    items: Vec<crate::analysis::findings::Item>,
) -> String {
    let (labels, views) = report.python_views();
    let section = if labels.is_empty() {
        String::new()
    } else {
        let command = match &report.subject {
            Subject::Command { command, .. } => command.as_slice(),
            Subject::Cell { .. } => &[],
        };
        super::python_listing::html(&labels, &super::python_listing::lines(&views), command)
    };
    // The page's title names what was traced: the command (its program's and its files'
    // names: "python3 script.py"), or the cell.
    let traced = match &report.subject {
        Subject::Command { command, .. } => {
            let named: Vec<String> = command
                .iter()
                .map(|w| match Path::new(w).file_name() {
                    Some(name) if Path::new(w).is_file() => name.to_string_lossy().into_owned(),
                    _ => w.clone(),
                })
                .collect();
            shortened(&named, 80)
        }
        Subject::Cell { .. } => report.traced(),
    };
    // Unfinished, it says so first, as run, sweep, compare and exec pages do.
    let title = if report.complete {
        format!("alloclab trace — {traced}")
    } else {
        format!("INCOMPLETE: alloclab trace — {traced}")
    };
    super::html::folder_page(
        &title,
        md,
        drawings,
        figures,
        section,
        super::headlines::Answer {
            price: Vec::new(),
            items,
            more: 0,
            incomplete: (!report.complete).then(|| {
                "INCOMPLETE: not every allocator asked for was traced (interrupted, or a run failed)"
                    .to_string()
            }),
        },
    )
}

/// Writes every file of the trace into `folder` (a command's untraced record is written
/// by its session); returns the names written, in order (REPORT.md and the console name
/// only these).
pub fn save(
    folder: &Folder,
    report: &TraceReport,
    untraced: UntracedRuns<'_>,
) -> Result<Vec<String>, ResultsError> {
    let mut written = Vec::new();
    // The untraced processes' or runs' memory over time, one file per allocator.
    for (name, text) in untraced.memory_files() {
        folder.text(&name, &text)?;
        written.push(name);
    }
    for t in report.traced_allocators() {
        let stem = file_stem(&t.label);
        if let Some(r) = t.cell().and_then(|c| c.record.as_ref()) {
            let run = format!("runs/{stem}.json");
            folder.json(&run, r)?;
            written.push(run);
        }
        let timeline = format!("timeline/{stem}.csv");
        folder.text(&timeline, &timeline_csv(t, report))?;
        written.push(timeline);
        if let Some(c) = t.command() {
            let mut events = format!("{EVENTS_HEADER}\n");
            events.push_str(&lines(&c.syscall_rows));
            let name = format!("events/{stem}.csv");
            folder.text(&name, &events)?;
            written.push(name);
        }
        if !report.stacks() {
            continue;
        }
        written.extend(save_stacks(
            folder,
            &t.label,
            &t.faults_folded,
            &t.syscalls_folded,
            report.fault_period,
        )?);
        if let Some(Ok(v)) = t.python() {
            written.extend(python::save_python_stacks(
                folder,
                &t.label,
                v,
                report.fault_period,
            )?);
        }
    }
    if let (true, Some((a, b))) = (report.stacks(), report.first_two()) {
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
    if let Some(r) = report
        .allocators
        .iter()
        .find_map(|t| t.cell().and_then(|c| c.record.as_ref()))
    {
        folder.json("env.json", &r.env)?;
        written.push("env.json".into());
    }
    folder.json("trace.json", report)?;
    written.push("trace.json".into());
    let items = answer(report);
    let (variant, size) = match &report.subject {
        Subject::Cell { variant, size, .. } => (Some(*variant), Some(*size)),
        Subject::Command { .. } => (None, None),
    };
    folder.json(
        "findings.json",
        &crate::analysis::findings::TraceFindings {
            schema: crate::analysis::findings::SCHEMA,
            traced: report.traced(),
            variant,
            size,
            complete: report.complete,
            answer: items.clone(),
        },
    )?;
    written.push("findings.json".into());
    let md = markdown(report, &written);
    folder.text("REPORT.md", &md.md)?;
    folder.text(
        "report.html",
        &page(report, &md, drawings, untraced.figures(), items),
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
    let name = crate::model::spec::pair_stem(a.0, b.0);
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
        let name = crate::model::spec::pair_stem(a, b);
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

/// How the trace was made, in one paragraph (REPORT.md's and the page's).
fn about(report: &TraceReport) -> String {
    match &report.subject {
        Subject::Cell {
            iterations,
            attribution,
            ..
        } => format!(
            "One traced worker process per allocator: {iterations} measured iterations, each timed alone and kept (latency, minor faults from getrusage, RSS, heap top). {}",
            match attribution {
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
        ),
        Subject::Command { .. } if report.stacks() => format!(
            "One run of the command per allocator under `perf record`, from its exec to its exit: every brk, mmap, munmap, madvise and mremap of it and of every process it starts, with its user call stack; one user page fault in {} with its stack (DWARF unwinding); every user page fault and every change of the resident set without stacks, for the timeline. Counts are of the whole run, start-up included.",
            report.fault_period
        ),
        Subject::Command { .. } => "One run of the command per allocator under the ptrace tracer, from its launch to its end: every brk, mmap, munmap, madvise and mremap of it and of every process it starts, with its arguments and the time the tracer saw it (each call stops the command for a round trip through the tracer). No call stacks, faults or RSS over time (they need perf events). Counts are of the whole run, start-up included.".to_string(),
    }
}

/// REPORT.md's "By Python line" section of a Python command.
fn python_section(
    md: &mut String,
    found: &mut Vec<String>,
    report: &TraceReport,
    said: &str,
    written: &[String],
) {
    use super::html::bullet;
    let _ = writeln!(md, "## By Python line\n\n{said}.\n");
    for t in report.traced_allocators() {
        match t.python() {
            Some(Ok(v)) => {
                let repeated = python::repeated_lines(v);
                if !repeated.is_empty() {
                    let heading = format!(
                        "{}, the lines that ran more than once and made at least 1 % of a kind of event, most memory syscalls first:",
                        t.label
                    );
                    let _ = writeln!(md, "**{heading}**\n");
                    for l in repeated.iter().take(8) {
                        bullet(md, found, &heading, &python::line_summary_text(l));
                    }
                    md.push('\n');
                }
                let heading = format!("{}, by kind of event:", t.label);
                let _ = writeln!(md, "**{heading}**\n");
                for l in python::python_lines(v, 3) {
                    bullet(md, found, &heading, &l);
                }
                md.push('\n');
                python::python_table(md, v, 12);
                let stem = file_stem(&t.label);
                let graphs: Vec<String> = [("faults", "faults"), ("memory syscalls", "syscalls")]
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
                bullet(md, found, "", &line);
            }
            None => {}
        }
    }
}

/// REPORT.md: how the trace was made, the answer, the checks, what tracing cost, memory
/// over a life, the timeline and the call stacks.
pub fn markdown(report: &TraceReport, written: &[String]) -> super::html::Report {
    use super::html::bullet;
    let mut md = String::new();
    let mut found = Vec::new();
    let command = report.is_command();
    let title = if command {
        format!("`{}`", report.traced())
    } else {
        report.traced()
    };
    let _ = writeln!(md, "# Trace: {title}\n");
    if !report.complete {
        let _ = writeln!(
            md,
            "> **Incomplete:** {} of the allocators asked for were traced (interrupted, or a run failed).\n",
            report.traced_allocators().count()
        );
    }
    let about = about(report);
    let _ = writeln!(md, "{about}\n");
    if let Subject::Command {
        missing, python, ..
    } = &report.subject
    {
        for m in missing {
            let line = format!("**Not measured here:** {m}.");
            bullet(&mut md, &mut found, "", &line);
        }
        if let Some(said) = python {
            python_section(&mut md, &mut found, report, said, written);
        }
    }
    let _ = writeln!(md, "## Mechanism\n");
    for item in answer(report) {
        let _ = writeln!(md, "* {}", item.text);
    }
    // The recorded calls checked against an independent count, named per allocator
    // (after the answer, not as a part of its last item).
    let checks: Vec<String> = report
        .traced_allocators()
        .filter_map(|t| Some(format!("{}: {}", t.label, t.check()?)))
        .collect();
    if !checks.is_empty() {
        let heading = "The recorded calls against an independent count of the same run:";
        let _ = writeln!(md, "\n**{heading}**\n");
        for c in &checks {
            bullet(&mut md, &mut found, heading, c);
        }
    }
    let _ = writeln!(md, "\n## What tracing cost\n");
    for t in report.traced_allocators() {
        let line = format!("{}: {}", t.label, cost_text(t, report));
        bullet(&mut md, &mut found, "", &line);
    }
    let _ = match &report.subject {
        Subject::Cell { .. } => writeln!(
            md,
            "\nThe untraced processes ran compare's budget in interleaved rounds (order seed {}); the traced counts are never mixed into compare's figures.\n",
            report.order_seed
        ),
        Subject::Command { runs, .. } => writeln!(
            md,
            "\nThe untraced runs ({runs} per allocator, shuffled rounds, order seed {}) are exec's, in `untraced.json`; the traced counts are never mixed into them.\n",
            report.order_seed
        ),
    };
    let memory: Vec<String> = report
        .allocators
        .iter()
        .filter_map(|t| {
            let (m, ci) = t.untraced_memory();
            let text = crate::analysis::command::memory_text(m, ci)?;
            Some(format!("{}: {text}", t.label))
        })
        .collect();
    if !memory.is_empty() {
        let (heading, whose, traced_rss) = if command {
            (
                "Memory over a run",
                "The command's own process in its untraced runs, sampled by the driver (not its children): medians over the runs with their intervals.",
                "every sample of every untraced run; the traced run's RSS over time is in the timeline below (from kmem:rss_stat)",
            )
        } else {
            (
                "Memory over a process's life",
                "The untraced processes, sampled by the driver: medians over the processes with their intervals.",
                "every sample of every untraced process; the traced run's RSS per iteration is in the timeline below",
            )
        };
        let _ = writeln!(md, "## {heading}\n\n{whose}\n");
        for l in &memory {
            bullet(&mut md, &mut found, "", l);
        }
        let _ = writeln!(md, "\nAs data: `memory/<allocator>.csv`, {traced_rss}.\n");
    }
    let _ = writeln!(md, "## Timeline\n");
    for name in ["latency", "faults", "syscalls", "rss", "heap-top"] {
        // The plots that were drawn (see `plots`).
        if written.contains(&format!("plots/{name}.svg")) {
            let _ = writeln!(md, "![{name}](plots/{name}.svg)\n");
        }
    }
    let _ = if command {
        writeln!(
            md,
            "As data: `timeline/<allocator>.csv` ({COMMAND_TIMELINE_HEADER}), one row per bin; `events/<allocator>.csv` ({EVENTS_HEADER}), one row per memory syscall.\n"
        )
    } else {
        writeln!(
            md,
            "Per iteration, as data: `timeline/<allocator>.csv` ({}).\n",
            timeline_header()
        )
    };
    if report.stacks() {
        let _ = writeln!(md, "## Call stacks\n");
        let labels: Vec<&str> = report
            .traced_allocators()
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

/// What the console shows: what was traced, what is missing, a Python command's own
/// lines, then per allocator its answer, its Python lines, what tracing cost, the check
/// of its calls, and where the files are.
pub fn console(report: &TraceReport, out: &Path, written: &[String]) -> String {
    let width = crate::fmt::screen_width();
    let mut s = String::new();
    let mut say = |line: &str| s.push_str(&wrap(line, width, "", "  "));
    match &report.subject {
        Subject::Cell {
            iterations,
            attribution,
            ..
        } => {
            say(&format!(
                "{}, {iterations} traced iterations per allocator",
                report.traced()
            ));
            if let Some(why) = attribution {
                say(&format!("no call stacks: {why}"));
            }
        }
        Subject::Command {
            missing, python, ..
        } => {
            say(&format!(
                "`{}`, one traced run per allocator",
                report.traced()
            ));
            for m in missing {
                say(&format!("not measured here: {m}"));
            }
            if let Some(p) = python {
                say(&format!(
                    "Python: {}",
                    p.split(": run with").next().unwrap_or(p)
                ));
            }
        }
    }
    // A Python command's own lines first, as a line profiler shows them.
    let (labels, views) = report.python_views();
    if let Subject::Command { command, .. } = &report.subject {
        let (listed, elsewhere) =
            super::python_listing::own(super::python_listing::lines(&views), command);
        s.push_str(&super::python_listing::console(
            &labels, &listed, elsewhere, width, 8, 3,
        ));
    }
    let items = answer(report);
    let more = |s: &mut String, line: &str| s.push_str(&wrap(line, width, "  ", "    "));
    for t in &report.allocators {
        // The allocator's answer item; a failed one has nothing more to say.
        s.push_str(&item_lines(&items, &t.label, width));
        if !t.traced() {
            continue;
        }
        match t.python() {
            Some(Ok(v)) => {
                for l in python::python_summary(v, 0) {
                    more(&mut s, &l);
                }
            }
            Some(Err(why)) => more(&mut s, &format!("no Python lines: {why}")),
            None => {}
        }
        more(&mut s, &cost_text(t, report));
        if let Some(p) = t.command().and_then(|c| c.peak_rss_bytes) {
            more(
                &mut s,
                &format!("peak RSS of the command's process {}", human_bytes(p)),
            );
        }
        if let Some(c) = t.check() {
            more(&mut s, c);
        }
        if let Some(l) = &t.lost {
            more(&mut s, &format!("perf: {l}"));
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
