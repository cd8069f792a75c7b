//! `alloclab cliff`: bisection to the exact size where faults or syscalls per iteration
//! change, for one allocator, workload and variant.

use crate::analysis::answer::phrase as describe;
use crate::analysis::cells;
use crate::analysis::cliff::{self, Probe};
use crate::cli::CliffArgs;
use crate::engine::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::Format;
use crate::fmt::{fmt_count, fmt_ns, human_bytes};
use crate::model::budget::Budget;
use crate::model::knobs::AllocatorSpec;
use crate::model::metric::SpreadEntries;
use crate::model::run::RunSpec;
use crate::model::spec::{Variant, Workload};
use crate::model::summary::SummaryRow;
use crate::ui::progress::Progress;
use serde::Serialize;
use std::time::Duration;

/// `cliff --format json`: the exact sizes either side of the change, each measured
/// again in replicated processes.
#[derive(Serialize)]
struct CliffOutput {
    allocator: String,
    workload: Workload,
    variant: Variant,
    metric: &'static str,
    threshold: f64,
    /// "cross" (the value rises from below the threshold) or "change by" (it changes by
    /// `margin` or more from a level).
    change: &'static str,
    margin: f64,
    below: CliffSide,
    above: CliffSide,
    probes: usize,
    below_replicated: Replicated,
    above_replicated: Replicated,
    above_vs_below: Option<Across>,
    order_seed: u64,
    /// The known threshold of the allocator at the cliff, near it, or none (the same
    /// sentence as the text output's "behind it").
    behind_it: String,
    /// Above against below, from each side's recorded calls and faults.
    what_changes: Option<String>,
    /// Where --max-time cut the sides' processes: how many ran, in words (null: all).
    max_time_cut: Option<String>,
}

/// One side of the cliff as its bisection probe measured it.
#[derive(Serialize)]
struct CliffSide {
    size: u64,
    value_per_iter: f64,
    p50_ns: u64,
    p99_ns: u64,
    /// Its faults and memory syscalls per iteration, under the summary's columns.
    #[serde(flatten)]
    counts: SpreadEntries,
}

/// One side measured again in replicated processes.
#[derive(Serialize)]
struct Replicated {
    processes: u32,
    p50_ns: Option<u64>,
    p50_ci_low_ns: Option<u64>,
    p50_ci_high_ns: Option<u64>,
    ci_coverage: Option<f64>,
    error: Option<String>,
}

/// Above against below, paired by round.
#[derive(Serialize)]
struct Across {
    ratio: f64,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
    verdict: Option<&'static str>,
}

pub fn run(args: &CliffArgs, level: f64) -> Result<()> {
    if args.from >= args.to {
        return Err(Error::BadInput(format!(
            "--from ({}) must be smaller than --to ({})",
            args.from, args.to
        )));
    }
    if !args.program.command.is_empty() {
        return super::cliff_command::run(args, level);
    }
    let base = base_spec(args)?;
    preflight::refuse_idle_knobs(std::slice::from_ref(&base)).map_err(Error::BadInput)?;
    let workers = preflight::check(std::slice::from_ref(&base)).map_err(Error::bad)?;
    let mut exec = ProcessExecutor::new(workers, args.counters, Duration::from_secs(300))
        .map_err(|why| Error::counters(args.counters, why))?;
    // Where the cliff falls is counted from where the heap starts: every process of it,
    // probes, sides and their evidence, with one layout.
    exec.layout = crate::model::layout::LayoutMode::Fixed;
    crate::engine::begin();
    let budget = Budget::short(args.min_time);
    let metric = args.metric;
    let mut show = |p: &Probe| {
        crate::fmt::say!(
            "  size {:>12}: {} {} per iteration",
            fmt_count(p.size as f64),
            fmt_count(p.value),
            metric.name()
        );
    };
    let mut bound = cliff::Bound::new(args.max_time);
    let mut measure = |size| bound.probe(|| engine::probe(&mut exec, &base, &budget, size, metric));
    let c = cliff::find(
        &mut measure,
        args.from,
        args.to,
        metric,
        metric.trend(),
        1,
        &mut show,
    )
    .map_err(Error::from)?;
    // The latency either side, from replicated interleaved processes (a probe is one).
    let sides = [c.below.size, c.above.size].map(|size| RunSpec {
        size,
        ..base.clone()
    });
    let order_seed = args.program.order_seed.unwrap_or_else(engine::clock_seed);
    // Each side's processes, and one recorded process each: what its calls did.
    let mut progress = Progress::new(2 * args.processes as usize + 2);
    // The sides' rounds in what --max-time leaves, their recorded processes (a probe's
    // cost each, twice over for the recording) kept out of it; one round always runs.
    let reserve = 2.0 * 2.0 * bound.last();
    let (mut cells, cut) = engine::run_rounds_within(
        &sides,
        &budget,
        args.processes,
        (bound.left() - reserve).max(0.0),
        order_seed,
        &mut exec,
        &mut progress,
        level,
    );
    let cut = cut.map(|ran| {
        format!(
            "{ran} of the {} processes per side asked for: --max-time {} s left no room for more",
            args.processes,
            crate::fmt::trim_float(args.max_time)
        )
    });
    for c in &mut cells {
        let what = format!("evidence: {}", c.spec);
        engine::record_cell(c, &budget, &mut exec, &mut progress, &what);
    }
    progress.clear();
    let rows: Vec<SummaryRow> = cells.iter().map(cells::row).collect();
    let across = cells::compare(&cells[0], &cells[1], args.noise_threshold);
    // What changes across the cliff, by the one cause composer: above against below.
    let what_changes = across.map(|a| {
        let name = |n: u64| format!("{} elements", crate::fmt::group_thousands(n as i64));
        cells::why(
            (&cells[1], &name(c.above.size)),
            (&cells[0], &name(c.below.size)),
            &a,
        )
        .text
    });
    let found = Found {
        base: &base,
        metric,
        cliff: &c,
        rows: &rows,
        across,
        what_changes,
        order_seed,
        cut,
    };
    super::print_out(&if args.format == Format::Json {
        found.json()?
    } else {
        crate::fmt::wrap_lines(&found.text(), crate::fmt::screen_width())
    })
}

/// The built-in cell bisected: its allocator, workload and variant at --to.
fn base_spec(args: &CliffArgs) -> Result<RunSpec> {
    if args.bytes_per_element.is_some() {
        return Err(Error::BadInput(
            "--bytes-per-element is for your command after `--`: the built-in workload's buffers are f64 (8 bytes per element), and its cliffs are named without it".into(),
        ));
    }
    let Some(variant) = args.variant else {
        return Err(Error::BadInput(
            "--variant is required for the built-in workload (in-place, out-of-place, reuse or fused); or give your own command after `--` with {size} in it".into(),
        ));
    };
    let alloc: AllocatorSpec = args.allocator.parse().map_err(Error::bad)?;
    Ok(RunSpec {
        allocator: alloc.allocator,
        workload: args.workload,
        variant,
        size: args.to,
        threads: 1,
        seed: 42,
        knobs: alloc.knobs,
        thp: args.thp,
        library: alloc.library,
    })
}

/// A cliff found: the sizes either side, the latency there measured again, and the
/// threshold behind it.
struct Found<'a> {
    base: &'a RunSpec,
    metric: cliff::Metric,
    cliff: &'a cliff::Cliff<crate::model::record::RunRecord>,
    rows: &'a [SummaryRow],
    across: Option<crate::analysis::stats::Comparison>,
    /// Above against below, from their recorded calls: what changes (None without a
    /// comparison of the two sides).
    what_changes: Option<String>,
    order_seed: u64,
    /// Where --max-time cut the sides' rounds: how many ran, in words.
    cut: Option<String>,
}

impl Found<'_> {
    /// From nothing: the value crosses the metric's threshold; from a level (2 brk per
    /// iteration to 0, or to 3), it changes by at least the margin.
    fn rises_from_nothing(&self) -> bool {
        self.cliff.below.value.abs() < self.metric.threshold()
    }

    /// The allocator's known threshold at the cliff, near it, or none, in a sentence.
    fn behind_it(&self) -> String {
        let (c, metric, base) = (self.cliff, self.metric, self.base);
        crate::analysis::thresholds::cause(
            &base.allocator_label(),
            base.workload.live_buffers(base.variant),
            crate::analysis::thresholds::is_onset(metric.threshold(), c.below.value, c.above.value),
            c.below.size,
            c.above.size,
        )
        .sentence()
    }

    fn json(&self) -> Result<String> {
        let (c, metric, base, rows) = (self.cliff, self.metric, self.base, self.rows);
        let side = |p: &Probe| CliffSide {
            size: p.size,
            value_per_iter: p.value,
            p50_ns: p.record.p50_ns,
            p99_ns: p.record.p99_ns,
            counts: SpreadEntries(p.record.per_iter.clone()),
        };
        let replicated = |r: &SummaryRow| Replicated {
            processes: r.processes.unwrap_or(1),
            p50_ns: r.p50_ns,
            p50_ci_low_ns: r.p50_ci_low_ns,
            p50_ci_high_ns: r.p50_ci_high_ns,
            ci_coverage: r.ci_coverage,
            error: r.error.clone(),
        };
        let value = CliffOutput {
            allocator: base.allocator_label(),
            workload: base.workload,
            variant: base.variant,
            metric: metric.name(),
            threshold: metric.threshold(),
            change: if self.rises_from_nothing() {
                "cross"
            } else {
                "change by"
            },
            margin: c.margin,
            below: side(&c.below),
            above: side(&c.above),
            probes: c.probes,
            below_replicated: replicated(&rows[0]),
            above_replicated: replicated(&rows[1]),
            above_vs_below: self.across.map(|a| Across {
                ratio: a.ratio,
                ci_low: a.interval.map(|i| i.low),
                ci_high: a.interval.map(|i| i.high),
                verdict: a.verdict.map(|v| v.words()),
            }),
            order_seed: self.order_seed,
            behind_it: self.behind_it(),
            what_changes: self.what_changes.clone(),
            max_time_cut: self.cut.clone(),
        };
        Ok(serde_json::to_string_pretty(&value).map_err(Error::failed)? + "\n")
    }

    fn text(&self) -> String {
        let (c, metric, base, rows) = (self.cliff, self.metric, self.base, self.rows);
        let latency = |r: &SummaryRow| match (r.p50_ns, r.p50_ci_low_ns, r.p50_ci_high_ns) {
            (Some(p), Some(lo), Some(hi)) => format!(
                "p50 {} [{}, {}] over {} processes",
                fmt_ns(p as f64),
                fmt_ns(lo as f64),
                fmt_ns(hi as f64),
                r.processes.unwrap_or(1)
            ),
            (Some(p), _, _) => format!(
                "p50 {} from {} process(es), no interval",
                fmt_ns(p as f64),
                r.processes.unwrap_or(1)
            ),
            _ => format!("not measured: {}", r.error.as_deref().unwrap_or("failed")),
        };
        let side = |p: &Probe| {
            format!(
                "{} elements ({} per f64 buffer): {} {} per iteration, p50 {}",
                fmt_count(p.size as f64),
                human_bytes(p.size * 8),
                fmt_count(p.value),
                metric.name(),
                fmt_ns(p.record.p50_ns as f64)
            )
        };
        let across = match (self.across, &self.what_changes) {
            (Some(a), Some(w)) => format!("above vs below: {}\nwhat changes: {w}", describe(&a)),
            (Some(a), None) => format!("above vs below: {}", describe(&a)),
            (None, _) => "above vs below: no paired rounds (a side failed)".into(),
        };
        let how = if self.rises_from_nothing() {
            format!("cross {}", metric.threshold())
        } else {
            format!("change by {} or more", crate::fmt::fmt_count(c.margin))
        };
        let cut = self
            .cut
            .as_ref()
            .map_or(String::new(), |c| format!(" ({c})"));
        format!(
        "{} {} {}: {} per iteration {how} between\n  below: {}\n  above: {}\n({} probes)\nbehind it: {behind_it}\nlatency, measured again in interleaved rounds (order seed {order_seed}; layout held fixed: the element is counted from where the heap starts){cut}:\n  below: {}\n  above: {}\n  {across}\n",
        base.allocator_label(),
        base.workload,
        base.variant,
        metric.name(),
        side(&c.below),
        side(&c.above),
        c.probes,
        latency(&rows[0]),
        latency(&rows[1]),
        behind_it = self.behind_it(),
        order_seed = self.order_seed,
    )
    }
}
