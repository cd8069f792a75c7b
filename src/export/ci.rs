//! Results in the formats of continuous-benchmarking services: Bencher Metric Format
//! (`--format bmf`) and github-action-benchmark's `customSmallerIsBetter` JSON (`--format
//! github-action-benchmark`). One benchmark per cell (compare) or per allocator (exec),
//! named with the testbed's id so that a history those services keep never mixes machines.
//!
//! The two formats, as published (checked by tests/all/ci_formats.rs):
//!
//! * **BMF**: the JSON Schema at <https://bencher.dev/bmf.json> (draft-07; in the
//!   bencherdev/bencher repository `services/console/public/bmf.json`): an object whose
//!   keys are benchmark names, each an object whose keys are measures (a slug, name or
//!   UUID), each an object with the numbers `value` (required), `lower_value` and
//!   `upper_value`. A measure given by a slug that a project does not have yet is created
//!   with that slug as its name and generic units; `latency` is the built-in measure in
//!   nanoseconds (Bencher docs, "How to Track Custom Benchmarks"). A benchmark name holds
//!   at most 1,024 characters ("Bencher Metric Format", order of precedence). BMF has no
//!   place for the machine: Bencher takes it as `bencher run --testbed`.
//! * **github-action-benchmark** (`tool: customSmallerIsBetter`): a JSON array of
//!   `{"name": string, "unit": string, "value": number, "range"?: string, "extra"?:
//!   string}` (README, "customBiggerIsBetter and customSmallerIsBetter"; the zod schema
//!   `BenchmarkResult` in src/extract.ts). An empty array is refused by the action. The
//!   action shows `range` beside the value and `extra` in the chart's tooltip; a range
//!   that starts with `±` is rescaled when a unit changes, any other text is kept as is.

use crate::analysis::command::ExecRow;
use crate::analysis::stats::level_text;
use crate::model::environment::Environment;
use crate::model::metric::{MEMORY_SYSCALLS, MINOR_FAULTS, RUN_METRICS};
use crate::model::spec::file_stem;
use crate::model::summary::SummaryRow;
use serde_json::{json, Map, Value};

/// The longest benchmark name Bencher takes.
pub const BENCHER_NAME_MAX: usize = 1024;

/// The machine a history belongs to: what changes page faults, syscalls and times
/// without any change to the program or the allocator. Two machines (or one after a
/// kernel or glibc update, or with another THP mode) have different ids, and so their
/// benchmarks have different names.
///
/// Allocator versions are not part of it: an allocator upgrade is a change to see in the
/// history of the same machine, not another machine. Each entry of the
/// github-action-benchmark JSON names its allocator's version, and the stderr line
/// lists them all. (glibc is part of it: it is the machine's C library, and the system
/// allocator with it.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Testbed {
    pub cpu_model: String,
    /// `uname`: system, release and machine (`Linux 6.1.0-18-amd64 x86_64`).
    pub kernel: String,
    /// /sys/kernel/mm/transparent_hugepage/enabled and defrag, the selected modes.
    pub thp_enabled: String,
    pub thp_defrag: String,
    pub glibc_version: String,
    /// How the workers shared the machine where that moves what they measure: `jobs=2`
    /// for `compare --jobs 2` (workers at once share memory bandwidth and caches, and
    /// ratios moved beyond their intervals, docs/compare.md); empty for one at a time,
    /// which keeps the ids of histories from before it.
    pub placement: String,
}

impl Testbed {
    pub fn of(env: &Environment) -> Self {
        Testbed {
            cpu_model: env.cpu_model.clone(),
            kernel: env.kernel.clone(),
            thp_enabled: env.thp_enabled.clone(),
            thp_defrag: env.thp_defrag.clone(),
            glibc_version: env.glibc_version.clone(),
            placement: String::new(),
        }
    }

    /// 8 hex digits: the first 32 bits of the FNV-1a 64-bit hash of the fields, each as
    /// `name=value` and a newline. FNV-1a is fixed by its definition (offset basis
    /// 0xcbf29ce484222325, prime 0x100000001b3), so the id of a machine is the same in
    /// every version of the lab.
    pub fn id(&self) -> String {
        let mut text = format!(
            "cpu={}\nkernel={}\nthp_enabled={}\nthp_defrag={}\nglibc={}\n",
            self.cpu_model, self.kernel, self.thp_enabled, self.thp_defrag, self.glibc_version
        );
        if !self.placement.is_empty() {
            text.push_str(&format!("placement={}\n", self.placement));
        }
        format!("{:08x}", fnv1a64(text.as_bytes()) >> 32)
    }

    /// "testbed 1a2b3c4d: CPU …; kernel …; THP madvise (defrag madvise); glibc 2.36".
    pub fn describe(&self) -> String {
        format!(
            "testbed {}: CPU {}; kernel {}; THP {} (defrag {}); glibc {}{}",
            self.id(),
            self.cpu_model,
            self.kernel,
            self.thp_enabled,
            self.thp_defrag,
            self.glibc_version,
            if self.placement.is_empty() {
                String::new()
            } else {
                format!("; workers {}", self.placement)
            }
        )
    }

    /// The start of every benchmark name of `command` on this machine:
    /// `alloclab/testbed-1a2b3c4d/compare`.
    pub fn prefix(&self, command: &str) -> String {
        name_prefix(&self.id(), command)
    }
}

/// FNV-1a, 64 bits, byte by byte.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn name_prefix(id: &str, command: &str) -> String {
    format!("alloclab/testbed-{id}/{command}")
}

/// What ran of a session's plan, said on every github-action-benchmark entry.
#[derive(Clone, Debug)]
pub struct Session {
    /// The subcommand: `compare`, `exec`.
    pub command: &'static str,
    pub complete: bool,
    /// `SIGINT`, `SIGTERM`, `max-time`: why an incomplete session stopped.
    pub stopped_by: Option<String>,
    /// What a benchmark's figures are medians over: `processes` or `runs`.
    pub replicates: &'static str,
    /// How many of them each benchmark was to get.
    pub planned: u32,
    /// The confidence level of the intervals.
    pub level: f64,
}

/// One measured figure of a benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Bencher's measure slug; also ends the github-action-benchmark entry's name.
    pub measure: &'static str,
    /// github-action-benchmark's unit (BMF has none: Bencher's measure says it).
    pub unit: &'static str,
    pub value: f64,
    /// lower and upper value, where the row has them.
    pub bounds: Option<(f64, f64)>,
    /// What the bounds are, in words (for github-action-benchmark's `extra`).
    pub bounds_are: Option<String>,
    /// The bounds' kind as github-action-benchmark's `range` starts: "95 % CI",
    /// "75 % CI" (an interval of less coverage than the level: too few processes or
    /// runs), "min–max".
    pub range_label: Option<String>,
    /// What the value is, in words.
    pub value_is: String,
}

/// One benchmark: a cell or an allocator, with the figures it has.
#[derive(Clone, Debug, PartialEq)]
pub struct Benchmark {
    pub name: String,
    pub figures: Vec<Figure>,
    /// Lines every entry of this benchmark carries in github-action-benchmark's `extra`:
    /// the allocator and its version, the processes or runs behind the figures.
    pub notes: Vec<String>,
}

/// A figure only where it was measured: None stays out.
fn figure(
    measure: &'static str,
    unit: &'static str,
    value_is: impl Into<String>,
    value: Option<f64>,
    bounds: Option<(Option<f64>, Option<f64>)>,
    bounds_are: impl FnOnce() -> Bounds,
) -> Option<Figure> {
    let value = value.filter(|v| v.is_finite())?;
    let bounds = match bounds {
        Some((Some(lo), Some(hi))) if lo.is_finite() && hi.is_finite() => Some((lo, hi)),
        _ => None,
    };
    let (range_label, bounds_are) = match bounds {
        Some(_) => {
            let b = bounds_are();
            (Some(b.label), Some(b.words))
        }
        None => (None, None),
    };
    Some(Figure {
        measure,
        unit,
        value,
        bounds,
        bounds_are,
        range_label,
        value_is: value_is.into(),
    })
}

/// What a figure's bounds are: a short label and the words that say it.
struct Bounds {
    label: String,
    words: String,
}

/// No bounds (the closure of a figure that has none).
fn no_bounds() -> Bounds {
    Bounds {
        label: String::new(),
        words: String::new(),
    }
}

/// The min and max over `n` processes.
fn spread(n: Option<u32>) -> Bounds {
    Bounds {
        label: "min–max".into(),
        words: match n {
            Some(n) => format!("min and max over {n} processes"),
            None => "min and max over processes".into(),
        },
    }
}

fn u(v: Option<u64>) -> Option<f64> {
    v.map(|v| v as f64)
}

/// The interval of a median over `n` processes or runs, by order statistics: "95 %
/// interval of the median over 6 processes (order statistics; coverage 96.9 %)", or,
/// where too few of them cannot reach the level, the coverage they reach: "75.0 %
/// interval of the median over 3 runs (order statistics: 3 runs cannot reach 95 %)".
fn interval(n: Option<u32>, replicates: &str, coverage: Option<f64>, level: f64) -> Bounds {
    let over = n.map_or(String::new(), |n| format!(" over {n} {replicates}"));
    match coverage {
        Some(c) if c < level - 1e-12 => Bounds {
            label: format!("{:.1} % CI", 100.0 * c),
            words: format!(
                "{:.1} % interval of the median{over} (order statistics: {} cannot reach {})",
                100.0 * c,
                n.map_or(format!("these {replicates}"), |n| format!(
                    "{n} {replicates}"
                )),
                level_text(level)
            ),
        },
        _ => Bounds {
            label: format!("{} CI", level_text(level)),
            words: format!(
                "{} interval of the median{over} (order statistics{})",
                level_text(level),
                coverage.map_or(String::new(), |c| format!("; coverage {:.1} %", 100.0 * c))
            ),
        },
    }
}

/// The benchmarks of compare's cells (and of any session of cells): one per cell that
/// has figures (a failed cell has none and is left out), named
/// `alloclab/testbed-<id>/<command>/<workload>/<variant>/<size>/<allocator>` (with
/// `/t<threads>` before the allocator when not 1), the allocator as its file stem.
pub fn cell_benchmarks(
    rows: &[SummaryRow],
    session: &Session,
    testbed: &Testbed,
) -> Vec<Benchmark> {
    let prefix = testbed.prefix(session.command);
    rows.iter()
        .filter(|r| r.status.is_ok())
        .map(|r| {
            let threads = if r.threads == 1 {
                String::new()
            } else {
                format!("/t{}", r.threads)
            };
            let name = format!(
                "{prefix}/{}/{}/{}{threads}/{}",
                r.workload,
                r.variant,
                r.size,
                file_stem(&r.allocator_spec)
            );
            let n = r.processes;
            let ci = || interval(n, "processes", r.ci_coverage, session.level);
            let spread = || spread(n);
            let figures = [
                figure(
                    "latency",
                    "ns",
                    "the median over processes of each process's p50 time of one iteration",
                    u(r.p50_ns),
                    Some((u(r.p50_ci_low_ns), u(r.p50_ci_high_ns))),
                    ci,
                ),
                figure(
                    "latency-p99",
                    "ns",
                    "the median over processes of each process's p99 time of one iteration",
                    u(r.p99_ns),
                    Some((u(r.p99_ci_low_ns), u(r.p99_ci_high_ns))),
                    ci,
                ),
                figure(
                    "minor-faults-per-iter",
                    "faults/iter",
                    "minor page faults per iteration, the median over processes",
                    r.per_iter[MINOR_FAULTS],
                    Some((r.spread.min[MINOR_FAULTS], r.spread.max[MINOR_FAULTS])),
                    spread,
                ),
                figure(
                    "memory-syscalls-per-iter",
                    "syscalls/iter",
                    "brk + mmap + munmap + madvise + mremap calls per iteration, the median over processes",
                    r.per_iter[MEMORY_SYSCALLS],
                    Some((
                        r.spread.min[MEMORY_SYSCALLS],
                        r.spread.max[MEMORY_SYSCALLS],
                    )),
                    spread,
                ),
                figure(
                    "peak-rss",
                    "bytes",
                    "the worker's peak resident set, the median over processes",
                    u(r.rss_peak_bytes),
                    None,
                    no_bounds,
                ),
                figure(
                    "end-rss",
                    "bytes",
                    "the worker's resident set after the measured loop, the median over processes",
                    u(r.rss_end_bytes),
                    None,
                    no_bounds,
                ),
            ]
            .into_iter()
            .flatten()
            .collect();
            let mut notes = vec![format!(
                "allocator {}: {}",
                r.allocator_spec,
                r.allocator_version.as_deref().unwrap_or("version unknown")
            )];
            notes.push(replicates_note(n.map(|n| n as usize), session));
            Benchmark {
                name,
                figures,
                notes,
            }
        })
        .collect()
}

/// "processes: 6 (planned 6)".
fn replicates_note(n: Option<usize>, session: &Session) -> String {
    format!(
        "{}: {} (planned {})",
        session.replicates,
        n.map_or("?".to_string(), |n| n.to_string()),
        session.planned
    )
}

/// Milliseconds as nanoseconds, to the picosecond: the row's ms are ns / 1e6, and the
/// product carries the float's last-bit noise (12.345678 ms → 12345677.999999998).
fn ms_to_ns(ms: f64) -> f64 {
    (ms * 1e9).round() / 1e3
}

/// The name of exec's benchmark of `allocator` running `command` (as shell words):
/// `alloclab/testbed-<id>/exec/<command>/<allocator>`, both as file stems (no `/`).
pub fn exec_name(testbed_id: &str, command: &str, allocator: &str) -> String {
    format!(
        "{}/{}/{}",
        name_prefix(testbed_id, "exec"),
        file_stem(command),
        file_stem(allocator)
    )
}

/// The benchmarks of exec's allocators: one per allocator with runs (a failed one is
/// left out). Latency is the wall time of one run of the command, in ns (Bencher's
/// `latency` unit; Bencher's own hyperfine adapter does the same with a command's time).
pub fn exec_benchmarks(rows: &[ExecRow], session: &Session, testbed: &Testbed) -> Vec<Benchmark> {
    let id = testbed.id();
    rows.iter()
        .filter(|r| r.status.is_ok())
        .map(|r| {
            let ns = |v: Option<f64>| v.map(ms_to_ns);
            let latency = figure(
                "latency",
                "ns",
                "the median over runs of the command's wall time",
                ns(r.wall_median_ms),
                Some((ns(r.wall_ci_low_ms), ns(r.wall_ci_high_ms))),
                || {
                    interval(
                        Some(r.runs as u32),
                        "runs",
                        r.wall_ci_coverage,
                        session.level,
                    )
                },
            );
            // Each per-run registry entry CI is given, in its unit's base (a peak RSS
            // in bytes).
            let counts = RUN_METRICS.iter().filter_map(|m| {
                let (measure, unit) = m.ci?;
                figure(
                    measure,
                    unit,
                    format!("{}, the median over runs", m.meaning),
                    r.per_run[*m].map(|v| v * m.scale),
                    None,
                    no_bounds,
                )
            });
            let figures = latency.into_iter().chain(counts).collect();
            Benchmark {
                name: exec_name(&id, &r.command, &r.allocator),
                figures,
                notes: vec![
                    format!("command: {}", r.command),
                    format!(
                        "allocator {}: {}",
                        r.allocator,
                        r.allocator_version.as_deref().unwrap_or("version unknown")
                    ),
                    format!("memory syscalls counted by: {}", r.syscall_counter),
                    replicates_note(Some(r.runs), session),
                ],
            }
        })
        .collect()
}

/// Two benchmarks of one name would be one in both services' histories.
fn check_unique(benches: &[Benchmark]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for b in benches {
        if !seen.insert(b.name.as_str()) {
            return Err(format!(
                "two benchmarks would both be named '{}'; give their allocators names whose file stems differ",
                b.name
            ));
        }
    }
    Ok(())
}

fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// Bencher Metric Format: `{"<benchmark>": {"<measure>": {"value", "lower_value"?,
/// "upper_value"?}}}`, lower and upper only where the row has both. A benchmark without
/// any figure is left out (BMF has no way to say "not measured" but to leave it out).
pub fn bmf(benches: &[Benchmark]) -> Result<String, String> {
    check_unique(benches)?;
    let mut out = Map::new();
    for b in benches.iter().filter(|b| !b.figures.is_empty()) {
        if b.name.chars().count() > BENCHER_NAME_MAX {
            return Err(format!(
                "the benchmark name '{}…' has {} characters, more than the {BENCHER_NAME_MAX} Bencher takes; give a shorter command (a script that runs it)",
                b.name.chars().take(80).collect::<String>(),
                b.name.chars().count()
            ));
        }
        let mut measures = Map::new();
        for f in &b.figures {
            let mut m = Map::new();
            m.insert("value".into(), number(f.value));
            if let Some((lo, hi)) = f.bounds {
                m.insert("lower_value".into(), number(lo));
                m.insert("upper_value".into(), number(hi));
            }
            measures.insert(f.measure.into(), Value::Object(m));
        }
        out.insert(b.name.clone(), Value::Object(measures));
    }
    Ok(to_text(&Value::Object(out)))
}

fn to_text(v: &Value) -> String {
    // A tree of strings and finite numbers: serializing it cannot fail.
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

/// A bound as github-action-benchmark's range shows it: the number as JSON would write
/// it, without a trailing ".0".
fn plain(v: f64) -> String {
    format!("{v}")
}

/// github-action-benchmark's `customSmallerIsBetter` JSON: one entry per benchmark and
/// figure, named `<benchmark>/<measure>`, with its unit; `range` is the figure's bounds
/// as "95 % CI low–high" or "min–max low–high" (not "± x": the interval is not
/// symmetric); `extra` says what the value and the range are, the testbed's whole
/// fingerprint, the allocator and its version, what ran of the plan, and "incomplete"
/// when the session stopped early.
pub fn github_action_benchmark(
    benches: &[Benchmark],
    session: &Session,
    testbed: &Testbed,
) -> Result<String, String> {
    check_unique(benches)?;
    let mut out = Vec::new();
    let state = if session.complete {
        "session: complete".to_string()
    } else {
        format!(
            "session: INCOMPLETE, stopped by {}; the figures are from the {} that finished",
            session.stopped_by.as_deref().unwrap_or("an interrupt"),
            session.replicates
        )
    };
    for b in benches {
        for f in &b.figures {
            let mut extra = vec![format!("value: {}", f.value_is)];
            if let Some(words) = &f.bounds_are {
                extra.push(format!("range: {words}"));
            }
            extra.push(testbed.describe());
            extra.extend(b.notes.iter().cloned());
            extra.push(state.clone());
            let mut entry = Map::new();
            entry.insert("name".into(), json!(format!("{}/{}", b.name, f.measure)));
            entry.insert("unit".into(), json!(f.unit));
            entry.insert("value".into(), number(f.value));
            if let (Some((lo, hi)), Some(kind)) = (f.bounds, &f.range_label) {
                entry.insert(
                    "range".into(),
                    json!(format!("{kind} {}–{}", plain(lo), plain(hi))),
                );
            }
            entry.insert("extra".into(), json!(extra.join("\n")));
            out.push(Value::Object(entry));
        }
    }
    Ok(to_text(&Value::Array(out)))
}

/// What the lower and upper values of `benches` are, each kind once.
fn bounds_line(benches: &[Benchmark]) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for f in benches.iter().flat_map(|b| &b.figures) {
        if let Some(k) = f.bounds_are.as_deref() {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    if kinds.is_empty() {
        return "bounds: none (no row has an interval or a spread: one process or run each)".into();
    }
    format!(
        "bounds (lower_value, upper_value): {}; a figure without bounds has none in its row",
        kinds.join("; ")
    )
}

/// `benches` in a CI service's format (None for the formats of rows).
pub fn render(
    format: super::Format,
    benches: &[Benchmark],
    session: &Session,
    testbed: &Testbed,
) -> Option<Result<String, String>> {
    match format {
        super::Format::Bmf => Some(bmf(benches)),
        super::Format::GithubActionBenchmark => {
            Some(github_action_benchmark(benches, session, testbed))
        }
        _ => None,
    }
}

/// The stderr lines of a CI format: the testbed the names carry, each allocator's
/// version, and what lower and upper values are.
pub fn stderr_lines(benches: &[Benchmark], testbed: &Testbed) -> Vec<String> {
    let mut allocators: Vec<&str> = Vec::new();
    for b in benches {
        for n in &b.notes {
            if n.starts_with("allocator ") && !allocators.contains(&n.as_str()) {
                allocators.push(n);
            }
        }
    }
    let allocators: Vec<&str> = allocators
        .iter()
        .map(|n| n.trim_start_matches("allocator "))
        .collect();
    vec![
        format!(
            "{} (in every benchmark name; for Bencher also: bencher run --testbed alloclab-{})",
            testbed.describe(),
            testbed.id()
        ),
        format!("allocators: {}", allocators.join("; ")),
        bounds_line(benches),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::summary::sample;

    fn testbed() -> Testbed {
        Testbed {
            cpu_model: "Test CPU @ 1 GHz".into(),
            kernel: "Linux 6.1.0 x86_64".into(),
            thp_enabled: "madvise".into(),
            thp_defrag: "madvise".into(),
            glibc_version: "2.36".into(),
            placement: String::new(),
        }
    }

    fn session() -> Session {
        Session {
            command: "compare",
            complete: true,
            level: crate::analysis::stats::DEFAULT_LEVEL,
            stopped_by: None,
            replicates: "processes",
            planned: 6,
        }
    }

    #[test]
    fn the_testbed_id_is_fnv1a_of_the_fingerprint_and_changes_with_every_field() {
        // The published test vectors of FNV-1a 64: the hash is the standard one.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        let t = testbed();
        assert_eq!(t.id().len(), 8);
        assert_eq!(t.id(), testbed().id());
        // One worker at a time keeps the id it had before placements were part of it.
        assert_eq!(t.id(), "b7bd566c");
        let mut ids = std::collections::HashSet::new();
        ids.insert(t.id());
        for change in 0..6 {
            let mut o = testbed();
            match change {
                0 => o.cpu_model.push('X'),
                1 => o.kernel = "Linux 6.1.1 x86_64".into(),
                2 => o.thp_enabled = "never".into(),
                3 => o.thp_defrag = "always".into(),
                4 => o.placement = "jobs=2".into(),
                _ => o.glibc_version = "2.41".into(),
            }
            assert!(ids.insert(o.id()), "change {change} kept the id");
        }
    }

    #[test]
    fn compare_rows_become_bmf_with_the_rows_own_figures() {
        let mut one = sample("system", "out-of-place", 5_000, 3.0, None);
        one.processes = Some(6);
        one.p50_ci_low_ns = Some(4_900);
        one.p50_ci_high_ns = Some(5_200);
        one.ci_coverage = Some(0.96875);
        one.p99_ci_low_ns = Some(9_000);
        one.p99_ci_high_ns = Some(11_000);
        one.spread.min[MINOR_FAULTS] = Some(2.5);
        one.spread.max[MINOR_FAULTS] = Some(3.5);
        one.per_iter[MEMORY_SYSCALLS] = Some(2.0);
        one.spread.min[MEMORY_SYSCALLS] = Some(2.0);
        one.spread.max[MEMORY_SYSCALLS] = Some(2.0);
        one.rss_peak_bytes = Some(9_000_000);
        one.rss_end_bytes = None;
        one.allocator_version = Some("glibc 2.36".into());
        let mut failed = sample("jemalloc", "out-of-place", 5_000, 3.0, None);
        failed.status = crate::model::summary::RunStatus::Failed;
        let benches = cell_benchmarks(&[one.clone(), failed], &session(), &testbed());
        assert_eq!(benches.len(), 1, "a failed cell has no benchmark");
        let name = format!(
            "alloclab/testbed-{}/compare/scale/out-of-place/1000/system",
            testbed().id()
        );
        let v: Value = serde_json::from_str(&bmf(&benches).unwrap()).unwrap();
        let m = &v[&name];
        assert_eq!(
            m["latency"],
            json!({"value": 5000.0, "lower_value": 4900.0, "upper_value": 5200.0})
        );
        assert_eq!(m["latency-p99"]["value"], 10_000.0);
        assert_eq!(m["minor-faults-per-iter"]["lower_value"], 2.5);
        assert_eq!(m["memory-syscalls-per-iter"]["value"], 2.0);
        assert_eq!(m["peak-rss"], json!({"value": 9_000_000.0}));
        // Not measured: not there (never 0).
        assert!(m.get("end-rss").is_none(), "{m}");
        // One process: no interval, so no bounds.
        let mut single = one.clone();
        single.processes = Some(1);
        single.p50_ci_low_ns = None;
        single.p50_ci_high_ns = None;
        let v: Value = serde_json::from_str(
            &bmf(&cell_benchmarks(&[single], &session(), &testbed())).unwrap(),
        )
        .unwrap();
        assert_eq!(v[&name]["latency"], json!({"value": 5000.0}));
    }

    #[test]
    fn github_action_benchmark_entries_carry_the_fingerprint_range_and_state() {
        let mut r = sample("mimalloc", "in-place", 700, 0.0, None);
        r.processes = Some(6);
        r.p50_ci_low_ns = Some(690);
        r.p50_ci_high_ns = Some(720);
        r.ci_coverage = Some(0.96875);
        r.allocator_version = Some("2.2.4".into());
        let mut s = session();
        s.complete = false;
        s.stopped_by = Some("max-time".into());
        let text = github_action_benchmark(&cell_benchmarks(&[r], &s, &testbed()), &s, &testbed())
            .unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let e = &v[0];
        assert!(e["name"]
            .as_str()
            .unwrap()
            .ends_with("/in-place/1000/mimalloc/latency"));
        assert_eq!(e["unit"], "ns");
        assert_eq!(e["value"], 700.0);
        assert_eq!(e["range"], "95 % CI 690–720");
        let extra = e["extra"].as_str().unwrap();
        for needle in [
            "95 % interval of the median over 6 processes (order statistics; coverage 96.9 %)",
            "Test CPU @ 1 GHz",
            "Linux 6.1.0 x86_64",
            "THP madvise (defrag madvise)",
            "glibc 2.36",
            "allocator mimalloc: 2.2.4",
            "processes: 6 (planned 6)",
            "INCOMPLETE, stopped by max-time",
        ] {
            assert!(extra.contains(needle), "{needle} not in {extra}");
        }
        let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "unit", "value", "range", "extra"]);
    }

    #[test]
    fn exec_rows_give_latency_in_ns_and_each_counted_syscall() {
        let row = ExecRow {
            allocator: "jemalloc:dirty_decay_ms=0".into(),
            status: crate::model::summary::RunStatus::Ok,
            command: "target/release/examples/temporaries --iterations 200".into(),
            runs: 5,
            wall_median_ms: Some(12.345678),
            wall_ci_low_ms: Some(12.0),
            wall_ci_high_ms: Some(13.5),
            wall_ci_coverage: Some(0.9375),
            ..ExecRow::default()
        };
        let mut row = row;
        use crate::model::metric::{RUN_BRK, RUN_MINOR_FAULTS, RUN_PEAK_RSS};
        row.per_run[RUN_MINOR_FAULTS] = Some(4_100.0);
        row.per_run[RUN_BRK] = Some(0.0);
        row.per_run[RUN_PEAK_RSS] = Some(10.5);
        let mut s = session();
        s.command = "exec";
        let benches = exec_benchmarks(&[row], &s, &testbed());
        assert_eq!(
            benches[0].name,
            format!(
                "alloclab/testbed-{}/exec/target_release_examples_temporaries_--iterations_200/jemalloc_dirty_decay_ms=0",
                testbed().id()
            )
        );
        let v: Value = serde_json::from_str(&bmf(&benches).unwrap()).unwrap();
        let m = &v[&benches[0].name];
        assert_eq!(
            m["latency"],
            json!({"value": 12_345_678.0, "lower_value": 12_000_000.0, "upper_value": 13_500_000.0})
        );
        assert_eq!(m["brk-calls"]["value"], 0.0, "a counted 0 is a figure");
        assert!(m.get("mmap-calls").is_none(), "not counted: left out");
        assert_eq!(m["peak-rss"]["value"], 10.5 * 1_048_576.0);
        assert_eq!(m["minor-faults"]["value"], 4100.0);
        // 5 runs reach 93.8 %, not 95 %: the range says the coverage it has.
        let v: Value =
            serde_json::from_str(&github_action_benchmark(&benches, &s, &testbed()).unwrap())
                .unwrap();
        assert_eq!(v[0]["range"], "93.8 % CI 12000000–13500000");
        assert!(v[0]["extra"]
            .as_str()
            .unwrap()
            .contains("93.8 % interval of the median over 5 runs (order statistics: 5 runs cannot reach 95 %)"));
    }

    #[test]
    fn names_that_collide_or_are_too_long_for_bencher_are_refused() {
        let b = Benchmark {
            name: "a".into(),
            figures: Vec::new(),
            notes: Vec::new(),
        };
        assert!(bmf(&[b.clone(), b.clone()]).unwrap_err().contains("'a'"));
        let long = Benchmark {
            name: "x".repeat(BENCHER_NAME_MAX + 1),
            figures: vec![Figure {
                measure: "latency",
                unit: "ns",
                value: 1.0,
                bounds: None,
                bounds_are: None,
                range_label: None,
                value_is: String::new(),
            }],
            notes: Vec::new(),
        };
        assert!(bmf(&[long]).unwrap_err().contains("1025 characters"));
    }
}
