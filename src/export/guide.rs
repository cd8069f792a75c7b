//! `README.md` of every results folder: what each of its files is and what each column of
//! its CSV files means, with units, so that a script's author reads the folder without
//! the lab's manual. Written from the folder's manifest (only the files it holds), beside
//! `folder.json`, each time the folder says how far it got.

use crate::model::metric::{
    Metric, Source, Unit, MEMORY_METRICS, METRICS, PER_CALL, RUN_METRICS, TIMELINE,
};
use std::fmt::Write as _;

/// A file (or a family of files) of a folder kind: how the guide names it, how its path
/// begins and ends, and what it is.
struct File {
    name: &'static str,
    prefix: &'static str,
    suffix: &'static str,
    what: &'static str,
}

const fn file(
    name: &'static str,
    prefix: &'static str,
    suffix: &'static str,
    what: &'static str,
) -> File {
    File {
        name,
        prefix,
        suffix,
        what,
    }
}

/// The files every kind may hold (after the kind's own, which come first).
const COMMON: &[File] = &[
    file("REPORT.md", "REPORT.md", "", "the answer first, then the findings, method, environment and tables, in Markdown"),
    file("report.html", "report.html", "", "the same as one self-contained page (nothing loaded from elsewhere), with charts"),
    file("findings.json", "findings.json", "", "the answer as data (schema alloclab-findings/1): each item's sentence and the figures it rests on"),
    file("env.json", "env.json", "", "machine, kernel, glibc, THP mode, CPU, allocator versions, codegen, command line"),
    file("folder.json", "folder.json", "", "what this folder holds and whether the measurement finished (`complete`); `files` lists every file of it"),
    file("README.md", "README.md", "", "this guide"),
    file("plots/*.svg", "plots/", ".svg", "the charts of REPORT.md as SVG"),
];

/// HdrHistogram's files, named per cell (run), allocator (exec) or allocator and size
/// (sweep).
const HISTOGRAMS: &[File] = &[
    file("histograms/<name>.us.csv", "histograms/", ".us.csv", "latency percentile distribution in HdrHistogram's CSV form, values in microseconds (µs); columns below"),
    file("histograms/<name>.us.hgrm", "histograms/", ".us.hgrm", "the same distribution in HdrHistogram's text form (as its HistogramLogProcessor prints it), values in µs"),
    file("histograms/<name>.ns.hlog", "histograms/", ".ns.hlog", "HdrHistogram interval log, values in nanoseconds: one interval per process (or run) at the time it ran"),
];

const RUN: &[File] = &[
    file("plan.json", "plan.json", "", "the experiment as run: its matrix, budget, run ids and command line"),
    file("calibration.json", "calibration.json", "", "the observer's costs and its effect on the median"),
    file("cliffs.json", "cliffs.json", "", "the cliffs found by bisection, to the element, with the changes that could not be bisected"),
    file("summary.csv", "summary.csv", "", "one row per cell (workload, variant, allocator, size, threads): medians over its processes; columns below"),
    file("runs/<run-id>.p<k>.json", "runs/", ".json", "each worker process's full record (schema alloclab.run/1); `.failed.json` a process that failed, with why"),
    file("memory/<run-id>.csv", "memory/", ".csv", "resident memory over each process's life, sampled by the driver from outside; columns below"),
    file("evidence/<run-id>.json", "evidence/", ".json", "what one more process of the cell, recorded, shows its memory syscalls and faults did: brk's growth and trims, mmap and munmap with their bytes, madvise by advice, faults on memory given back against first touches (or why nothing was recorded); the causes rest on it"),
];

const EXEC: &[File] = &[
    file("exec.json", "exec.json", "", "every run of every allocator (schema alloclab.exec/1): wall time, rusage, syscall counts, what the probe found, failures"),
    file("summary.csv", "summary.csv", "", "one row per allocator: medians over its runs; columns below"),
    file("memory/<allocator>.csv", "memory/", ".csv", "resident memory of the command's own process over each run, sampled by the driver; columns below"),
];

const SWEEP: &[File] = &[
    file("sweep.json", "sweep.json", "", "schema alloclab.sweep/1: the command, the sizes, every row, the cliffs, whether it finished"),
    file("cliffs.json", "cliffs.json", "", "every change between neighbouring sizes, bisected to its sizes where it held"),
    file("summary.csv", "summary.csv", "", "one row per size and allocator; columns below"),
    file("points/n<size>.json", "points/", ".json", "exec's record of that size (every run)"),
];

const TRACE: &[File] = &[
    file("trace.json", "trace.json", "", "schema alloclab.trace/1: what was traced, and per allocator the mechanism and the call paths behind the faults and syscalls, with their shares"),
    file("untraced.json", "untraced.json", "", "the runs without the tracer: what the tracer's overhead is measured against"),
    file("runs/<allocator>.json", "runs/", ".json", "the traced worker's record with every iteration's timeline"),
    file("memory/<allocator>.csv", "memory/", ".csv", "resident memory over each untraced run (a worker process, or a run of the command), sampled by the driver; columns below"),
    file("timeline/<allocator>.csv", "timeline/", ".csv", "the run over time (one row per iteration, or per bin of time for a command); columns below"),
    file("events/<allocator>.csv", "events/", ".csv", "every memory syscall with its time, process, size and cause; columns below"),
    file("stacks/*.folded", "stacks/", ".folded", "the sampled call stacks in folded form (one stack and its count per line), for flame graph tools"),
    file("flamegraphs/*.svg", "flamegraphs/", ".svg", "the same stacks drawn as flame graphs"),
    file("perf/*.data", "perf/", ".data", "perf's own recording, kept with --keep-perf-data"),
];

/// Columns written out here: the names (several sharing one meaning) and the meaning.
type Fixed = &'static [(&'static [&'static str], &'static str)];

/// A CSV file's columns: the names (several sharing one meaning) and the meaning; the
/// fixed ones and those of the metric registry's entries.
type Columns = Vec<(Vec<String>, String)>;

/// `fixed` as [`Columns`].
fn fixed(fixed: Fixed) -> Columns {
    fixed
        .iter()
        .map(|(names, meaning)| {
            (
                names.iter().map(|n| n.to_string()).collect(),
                meaning.to_string(),
            )
        })
        .collect()
}

/// summary.csv of `alloclab run` (and `compare --format csv`) before its figures.
const SUMMARY_HEAD: Fixed = &[
    (&["run_id"], "`<workload>-<variant>-<allocator>-n<size>-t<threads>`: names the cell's files (runs/, histograms/)"),
    (&["allocator", "workload", "variant", "size", "threads", "seed"], "the cell; size in elements"),
    (&["allocator_spec"], "the allocator with its knobs and THP mode, e.g. `system:top_pad=64M thp=never`"),
    (&["status", "error"], "`ok` or `failed`, and why it failed"),
    (&["iterations"], "measured iterations, summed over the processes"),
    (&["min_ns", "max_ns"], "the fastest and slowest iteration of all processes, ns"),
    (&["p50_ns", "p90_ns", "p99_ns", "p999_ns", "mean_ns"], "latency of one iteration, ns: with several processes the median over the processes of each one's figure (what intervals and verdicts are of)"),
    (&["pooled_p50_ns"], "the p50 of all processes' iterations pooled into one histogram, ns: what histograms/*.us.csv shows (the same as p50_ns with one process)"),
    (&["process_p50_ns"], "each process's p50 in round order, ns, separated by spaces: what `alloclab diff` pairs"),
    (&["throughput_gb_per_s"], "inputs read plus result written per iteration (× threads) over p50_ns, GB/s"),
    (&["syscall_counter"], "which method counted the syscalls: `perf` or `ptrace`"),
];

/// summary.csv's columns after its figures.
const SUMMARY_TAIL: Fixed = &[
    (&["rss_start_bytes", "rss_end_bytes"], "resident memory at the start / end of the measured phase, bytes"),
    (&["rss_peak_bytes"], "peak resident memory of the process (ru_maxrss), bytes"),
    (&["checksum"], "FNV-1a 64 of the output, 16 hex digits: equal across allocators when they computed the same"),
    (&["timer_overhead_ns"], "median cost of a pair of clock reads, ns"),
    (&["harness_overhead_ns_per_sample"], "cost of the loop around an empty iteration, ns"),
    (&["allocator_version"], "e.g. `glibc 2.36`, `jemalloc 5.3.1-…`, `mimalloc 3.3.2`"),
    (&["processes"], "worker processes behind the row"),
    (&["p50_ci_low_ns", "p50_ci_high_ns", "p99_ci_low_ns", "p99_ci_high_ns"], "the interval of the median p50 / p99 over processes, ns"),
    (&["ci_coverage"], "the coverage those intervals have (0.95 asked; fewer processes give less, e.g. 0.5 with two)"),
    (&["vs_in_place"], "p50 against the same allocator's in-place cell: the median of the per-round ratios (2.0: twice as slow)"),
    (&["vs_in_place_ci_low", "vs_in_place_ci_high"], "that ratio's interval (from two processes; its coverage is about ci_coverage)"),
    (&["vs_in_place_verdict"], "`faster`, `slower`, `no significant difference`, or `undecided` (an interval below the confidence level asked)"),
    (&["behaviours"], "figures whose processes fall into two or more groups, in words (`2 behaviours of minor faults: …`); their medians describe no process"),
];

/// summary.csv of `alloclab run` (and `compare --format csv`): its fixed columns, each
/// per-iteration registry entry's (with its meaning), and the lowest and highest process
/// of those with a spread.
/// A memory timeline file's columns: `first` (whose samples a row is), then the sample's.
fn memory_file_columns(first: &str, what: &str) -> Columns {
    let mut c = vec![(vec![first.to_string()], what.to_string())];
    c.extend(fixed(MEMORY_SAMPLE_COLUMNS));
    c
}

/// A memory sample's columns (`memory/*.csv`).
const MEMORY_SAMPLE_COLUMNS: Fixed = &[
    (&["t_ms"], "when it was read, ms since the process was released to exec"),
    (&["rss_bytes"], "resident set (Rss), bytes: from /proc/<pid>/statm every 10 ms, from smaps_rollup every 100 ms"),
    (&["pss_bytes"], "proportional set (Pss), bytes; empty in statm's samples"),
    (&["anon_huge_bytes"], "anonymous memory in transparent huge pages (AnonHugePages), bytes; empty in statm's samples"),
    (&["lazyfree_bytes"], "pages freed with MADV_FREE not yet reclaimed (LazyFree), counted in Rss, bytes; empty in statm's samples"),
];

/// The memory registry's columns ([`MEMORY_METRICS`]), each said to be `of`.
fn memory_columns(of: &str) -> Columns {
    MEMORY_METRICS
        .iter()
        .map(|m| {
            (
                vec![m.key.to_string()],
                format!("{}; {of} (empty where not sampled)", m.meaning),
            )
        })
        .collect()
}

pub fn summary_columns() -> Columns {
    let mut c = fixed(SUMMARY_HEAD);
    c.extend(METRICS.iter().map(|m| {
        let meaning = if m.syscall {
            format!("{} (empty where they could not be counted)", m.meaning)
        } else {
            m.meaning.to_string()
        };
        (vec![m.key.to_string()], meaning)
    }));
    c.extend(fixed(SUMMARY_TAIL));
    c.extend(memory_columns("the median over the processes"));
    c.extend(memory_interval_columns(
        "processes",
        "the p50 interval (ci_coverage)",
    ));
    c.push((
        METRICS
            .iter()
            .filter(|m| m.spread)
            .flat_map(|m| [m.min_key(), m.max_key()])
            .collect(),
        "the lowest and highest of those counts over the processes".into(),
    ));
    c
}

/// The columns `compare --format csv` adds to the summary's.
pub const COMPARE_COLUMNS: Fixed = &[
    (&["complete", "stopped_by", "processes_planned"], "whether every cell got its processes, what stopped the session early, and the processes planned"),
    (&["jobs", "cpu"], "how many workers ran at once (--jobs) and the CPU every worker was kept on (--cpu; empty: none)"),
];

/// summary.csv of `alloclab exec` before its per-run figures.
const EXEC_HEAD: Fixed = &[
    (&["allocator"], "the allocator the command ran under"),
    (&["status", "error"], "`ok` or `failed`, and why"),
    (&["runs", "runs_planned"], "runs that finished, and runs planned"),
    (&["wall_median_ms", "wall_min_ms", "wall_max_ms"], "the command's wall time over the runs (median, lowest, highest), ms"),
    (&["wall_mad_pct"], "median absolute deviation of the wall time, % of the median"),
    (&["wall_ci_low_ms", "wall_ci_high_ms", "wall_ci_coverage"], "the interval of the median wall time, ms, and its coverage"),
    (&["baseline"], "the allocator the others are compared with (the first given)"),
    (&["vs_baseline", "vs_baseline_ci_low", "vs_baseline_ci_high"], "wall time against the baseline's: the median of the per-round ratios and its interval (2.0: twice as slow)"),
    (&["vs_baseline_verdict"], "`faster`, `slower`, `no significant difference` or `undecided`"),
];

/// exec's columns after its per-run figures.
const EXEC_TAIL: Fixed = &[
    (
        &["syscall_counter"],
        "how syscalls were counted (`perf`, `ptrace`), or why they were not",
    ),
    (
        &["allocator_version", "preload", "malloc_from"],
        "the allocator's version, the library preloaded, and where the command's malloc resolved",
    ),
    (&["command"], "the command as a shell would take it"),
    (
        &["run_wall_ms"],
        "each run's wall time in round order, ms, separated by spaces: what `alloclab diff` pairs",
    ),
    (
        &["complete", "stopped_by"],
        "whether every planned run ran, and the signal that stopped it",
    ),
    (
        &["behaviours"],
        "figures whose runs fall into two or more groups, in words",
    ),
    (
        &["traced_differs"],
        "with --counters ptrace: the traced run's figures the untraced runs do not reach",
    ),
];

/// summary.csv of `alloclab exec`: its fixed columns and each per-run registry entry's.
pub fn exec_columns() -> Columns {
    let mut c = fixed(EXEC_HEAD);
    c.extend(RUN_METRICS.iter().map(|m| {
        let unit = if m.unit == Unit::Mib { ", MiB" } else { "" };
        let of = if m.source == Source::Syscalls {
            "the median over the runs (with --counters ptrace: the one traced run's)"
        } else {
            "the median over the runs"
        };
        (
            vec![m.key.to_string()],
            format!("{}, {of}{unit}", m.meaning),
        )
    }));
    c.extend(fixed(EXEC_TAIL));
    c.extend(memory_columns(
        "the command's own process, the median over the runs",
    ));
    c.extend(memory_interval_columns("runs", "the wall time's interval"));
    c
}

/// The intervals of the memory entries with a spread: over `of` (processes, runs), at
/// the level of `level`.
fn memory_interval_columns(of: &str, level: &str) -> Columns {
    MEMORY_METRICS
        .iter()
        .filter(|m| m.spread)
        .map(|m| {
            let (low, high) = crate::model::metric::MemoryIntervals::keys(m);
            (
                vec![low, high],
                format!("the interval of that median over the {of} ({}), bytes, at {level}'s level; empty with fewer {of} than an interval needs", m.key),
            )
        })
        .collect()
}

/// summary.csv of `alloclab sweep` before its per-call figures.
const SWEEP_HEAD: Fixed = &[
    (&["size", "allocator"], "the size given to the command, and the allocator"),
    (&["status", "error"], "`ok` or `failed`, and why"),
    (&["runs"], "rounds measured"),
    (&["per"], "`call` (figures per call of the command's work, from runs of N and 2N calls) or `run` (per whole run)"),
    (&["time_ns", "time_ci_low_ns", "time_ci_high_ns", "ci_coverage"], "wall time per call (or run): median over the rounds, its interval and coverage, ns"),
];

/// The sweep's columns after its per-call figures.
const SWEEP_TAIL: Fixed = &[
    (
        &["peak_rss_mib"],
        "peak resident memory of the (longer) run, median, MiB",
    ),
    (
        &["run_wall_ms"],
        "median wall time of a whole (longer) run, ms",
    ),
    (
        &["syscall_counter"],
        "how syscalls were counted, or why they were not",
    ),
];

/// summary.csv of `alloclab sweep`: its fixed columns, each per-call entry's, and the
/// spread over the rounds of those with one.
pub fn sweep_columns() -> Columns {
    let mut c = fixed(SWEEP_HEAD);
    c.extend(PER_CALL.iter().map(|m| {
        (
            vec![m.stem().to_string()],
            format!(
                "{} per call (or run), as `{}` is per iteration",
                m.label, m.key
            ),
        )
    }));
    c.push((
        PER_CALL
            .iter()
            .filter(|m| m.spread)
            .map(|m| format!("{}_noise", m.stem()))
            .collect(),
        "their spread (max − min) over the rounds: what a change must exceed".into(),
    ));
    c.extend(fixed(SWEEP_TAIL));
    c
}

/// HdrHistogram's CSV (`histograms/*.us.csv`).
const HISTOGRAM_COLUMNS: Fixed = &[
    (
        &["Value"],
        "latency, µs (HdrHistogram's column name; the unit is the file's `.us`)",
    ),
    (
        &["Percentile"],
        "the share of samples at or below it (0 to 1)",
    ),
    (&["TotalCount"], "samples at or below it"),
    (&["1/(1-Percentile)"], "for plotting the tail on a log axis"),
];

/// timeline/<allocator>.csv of a built-in cell's trace.
const TRACE_TIMELINE_COLUMNS: Fixed = &[
    (&["iteration"], "a built-in cell's trace: the iteration (one row each); a command's rows are bins of time instead"),
    (&["start_ms", "elapsed_ns"], "when it began (ms from the first) and how long it took (ns)"),
    (&["faults"], "a command's trace: page faults in the bin"),
    (&["brk_delta_bytes", "mmap_bytes", "munmap_bytes", "madvise_bytes"], "bytes the heap top moved, and bytes mapped, unmapped and advised"),
    (&["rss_bytes"], "resident memory at its end, bytes"),
    (&["heap_top_offset_bytes"], "the heap's top (brk) above where it began, bytes"),
    (&["python_line"], "for a Python command: the script line most of the bin's events were at"),
];

/// timeline/<allocator>.csv of a trace: its fixed columns and the registry's timeline
/// entries (the syscalls also a command's bins have).
pub fn trace_timeline_columns() -> Columns {
    let mut c = fixed(TRACE_TIMELINE_COLUMNS);
    let (calls, own): (Vec<&Metric>, Vec<&Metric>) = TIMELINE.iter().partition(|m| m.syscall);
    c.extend(
        own.iter()
            .map(|m| (vec![m.stem().to_string()], format!("{} in it", m.label))),
    );
    c.push((
        calls.iter().map(|m| m.stem().to_string()).collect(),
        "those syscalls in it (empty without a syscall counter)".into(),
    ));
    c
}

/// events/<allocator>.csv of a trace.
pub const TRACE_EVENTS_COLUMNS: Fixed = &[
    (&["time_ms"], "when the call was made, ms from the start"),
    (&["pid"], "the process that made it"),
    (&["call"], "brk, mmap, munmap, madvise or mremap"),
    (&["bytes"], "the call's size argument in bytes (mmap, munmap, madvise, mremap); for brk the break address asked for (0: a query)"),
    (&["advice"], "madvise's advice as its number (4: MADV_DONTNEED, 8: MADV_FREE, 14: MADV_HUGEPAGE)"),
    (&["cause"], "the call path that made it, outermost first"),
];

fn files(kind: &str) -> Vec<&'static File> {
    let own: &[File] = match kind {
        "run" => RUN,
        "exec" => EXEC,
        "sweep" => SWEEP,
        "trace" => TRACE,
        _ => return Vec::new(),
    };
    let histograms: &[File] = match kind {
        "run" | "exec" | "sweep" => HISTOGRAMS,
        _ => &[],
    };
    own.iter().chain(histograms).chain(COMMON).collect()
}

/// The columns of the CSV files a kind writes, by the guide's name of the file.
fn csv_files(kind: &str) -> Vec<(&'static str, Columns)> {
    match kind {
        "run" => vec![
            ("summary.csv", summary_columns()),
            ("histograms/<name>.us.csv", fixed(HISTOGRAM_COLUMNS)),
            (
                "memory/<run-id>.csv",
                memory_file_columns("process", "the process's file id (runs/<id>.json)"),
            ),
        ],
        "exec" => vec![
            ("summary.csv", exec_columns()),
            ("histograms/<name>.us.csv", fixed(HISTOGRAM_COLUMNS)),
            (
                "memory/<allocator>.csv",
                memory_file_columns("run", "the run's round"),
            ),
        ],
        "sweep" => vec![
            ("summary.csv", sweep_columns()),
            ("histograms/<name>.us.csv", fixed(HISTOGRAM_COLUMNS)),
        ],
        "trace" => vec![
            ("timeline/<allocator>.csv", trace_timeline_columns()),
            ("events/<allocator>.csv", fixed(TRACE_EVENTS_COLUMNS)),
            (
                "memory/<allocator>.csv",
                memory_file_columns("run", "the untraced run's round, from 1"),
            ),
        ],
        _ => Vec::new(),
    }
}

fn matches(f: &File, path: &str) -> bool {
    if f.suffix.is_empty() {
        path == f.prefix
    } else {
        path.starts_with(f.prefix) && path.ends_with(f.suffix)
    }
}

/// The guide of a folder of `kind` (`run`, `exec`, `sweep`, `trace`: folder.json's
/// `kind`) holding `manifest` (paths relative to it), or None for a kind with nothing to
/// guide (generate's).
pub fn readme(
    kind: &str,
    manifest: &[String],
    header: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let known = files(kind);
    if known.is_empty() {
        return None;
    }
    let mut md = format!(
        "# What this folder holds\n\nWritten by `alloclab {}`; the lab's manual says more \
         (docs/output.md in its repository). Files are rewritten whole (never half-written); \
         `folder.json` says whether the measurement finished.\n\n## Files\n\n| file | what it is |\n|---|---|\n",
        kind
    );
    let mut shown_csv = Vec::new();
    for f in &known {
        let n = manifest
            .iter()
            .filter(|p| matches(f, p) && !earlier_match(&known, f, p))
            .count();
        let is_self = f.prefix == "README.md";
        if n == 0 && !is_self {
            continue;
        }
        let count = if n > 1 {
            format!(" ({n} files)")
        } else {
            String::new()
        };
        let _ = writeln!(md, "| `{}`{count} | {} |", f.name, f.what);
        shown_csv.push(f.name);
    }
    let unknown: Vec<&String> = manifest
        .iter()
        .filter(|p| !known.iter().any(|f| matches(f, p)))
        .collect();
    for p in unknown {
        let _ = writeln!(md, "| `{p}` | (not described here: see the lab's manual) |");
    }
    for (name, columns) in csv_files(kind) {
        if !shown_csv.contains(&name) {
            continue;
        }
        // The columns of this folder's own file (a command's trace and a built-in
        // cell's have different timelines), where it can be read.
        let file = known
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| manifest.iter().find(|p| matches(f, p)));
        let written: Option<Vec<String>> = file.and_then(|p| header(p)).map(|h| {
            h.trim_end()
                .split(',')
                .map(|c| c.trim_matches('"').to_string())
                .collect()
        });
        let has = |n: &str| written.as_ref().is_none_or(|w| w.iter().any(|c| c == n));
        let _ = write!(
            md,
            "\n## Columns of `{name}`\n\nEmpty cells are values that could not be read or do not apply (never 0 for unknown).\n\n| column | meaning |\n|---|---|\n"
        );
        for (names, meaning) in columns.iter() {
            let names: Vec<String> = names
                .iter()
                .filter(|n| has(n.as_str()))
                .map(|n| format!("`{n}`"))
                .collect();
            if !names.is_empty() {
                let _ = writeln!(md, "| {} | {meaning} |", names.join(", "));
            }
        }
    }
    Some(md)
}

/// Whether a file listed before `f` already describes `path` (so that `runs/*.json` of a
/// trace is not also counted as something later in the list).
fn earlier_match(known: &[&File], f: &File, path: &str) -> bool {
    known
        .iter()
        .take_while(|k| !std::ptr::eq(**k, f))
        .any(|k| matches(k, path))
}

/// Every column a kind's CSV files name, in the guide's order (for tests).
#[cfg(test)]
fn named(columns: Columns) -> Vec<String> {
    columns.into_iter().flat_map(|(n, _)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn header_of(csv: &str) -> BTreeSet<String> {
        csv.lines()
            .next()
            .unwrap()
            .split(',')
            .map(|s| s.trim_matches('"').to_string())
            .collect()
    }

    fn guide_of(columns: Columns) -> BTreeSet<String> {
        named(columns).into_iter().collect()
    }

    /// The guide names exactly the columns the lab writes: a column added without a
    /// meaning, or a meaning left for a column removed, fails here.
    #[test]
    fn every_written_column_has_a_meaning_and_every_meaning_a_column() {
        use crate::model::summary::SummaryRow;
        let summary = header_of(&crate::export::csv::to_csv(&[]));
        assert_eq!(guide_of(summary_columns()), summary);
        let compare = header_of(&crate::export::render(
            crate::export::RowFormat::Csv,
            &[] as &[crate::commands::compare::CompareRow],
        ));
        let mut both = guide_of(summary_columns());
        both.extend(guide_of(fixed(COMPARE_COLUMNS)));
        assert_eq!(both, compare);
        let _ = SummaryRow::empty();
        let exec = header_of(&crate::export::csv::csv_of(
            &[],
            &crate::analysis::command::ExecRow::default(),
        ));
        assert_eq!(guide_of(exec_columns()), exec);
        let sweep = header_of(&crate::export::csv::csv_of(
            &[],
            &crate::engine::program::PointRow::default(),
        ));
        assert_eq!(guide_of(sweep_columns()), sweep);
        let timeline: BTreeSet<String> = crate::export::trace::timeline_header()
            .split(',')
            .map(String::from)
            .chain(
                crate::export::trace::COMMAND_TIMELINE_HEADER
                    .split(',')
                    .map(String::from),
            )
            .collect();
        assert_eq!(guide_of(trace_timeline_columns()), timeline);
        let events: BTreeSet<String> = crate::export::trace::EVENTS_HEADER
            .split(',')
            .map(String::from)
            .collect();
        assert_eq!(guide_of(fixed(TRACE_EVENTS_COLUMNS)), events);
    }

    #[test]
    fn the_guide_lists_the_files_held_with_their_counts_and_only_those() {
        let manifest: Vec<String> = [
            "summary.csv",
            "runs/a.p1.json",
            "runs/a.p2.json",
            "histograms/a.us.csv",
            "REPORT.md",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let md = readme("run", &manifest, &|_| None).unwrap();
        assert!(
            md.contains("| `runs/<run-id>.p<k>.json` (2 files) |"),
            "{md}"
        );
        assert!(md.contains("| `summary.csv` |"), "{md}");
        assert!(md.contains("| `README.md` | this guide |"), "{md}");
        assert!(!md.contains("cliffs.json"), "{md}");
        assert!(!md.contains("report.html"), "{md}");
        assert!(md.contains("## Columns of `summary.csv`"), "{md}");
        assert!(md.contains("| `pooled_p50_ns` |"), "{md}");
        assert!(
            md.contains("## Columns of `histograms/<name>.us.csv`"),
            "{md}"
        );
        assert!(readme("generate", &manifest, &|_| None).is_none());
        // A trace's timeline: only the columns its file has.
        let trace = vec!["timeline/system.csv".to_string()];
        let md = readme("trace", &trace, &|p| {
            (p == "timeline/system.csv").then(|| "start_ms,faults,python_line\n".to_string())
        })
        .unwrap();
        assert!(md.contains("| `python_line` |"), "{md}");
        assert!(md.contains("| `start_ms` |"), "{md}");
        assert!(
            !md.contains("`iteration`") && !md.contains("`brk_delta_bytes`"),
            "{md}"
        );
    }
}
