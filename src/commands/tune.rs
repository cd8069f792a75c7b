//! `alloclab tune`: each allocator's defaults against its curated knob sets on one
//! workload, variant and size, with a verdict per set.

use crate::analysis::{cells, tune};
use crate::cli::TuneArgs;
use crate::engine::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::{self, table, Format, RowFormat};
use crate::fmt::group_thousands;
use crate::model::budget::Budget;
use crate::model::knobs::AllocatorSpec;
use crate::model::run::RunSpec;
use crate::model::spec::{Allocator, Choice};
use crate::model::summary::SummaryRow;
use crate::ui::progress::Progress;
use std::time::Duration;

pub fn run(args: &TuneArgs, level: f64) -> Result<()> {
    if !args.program.command.is_empty() {
        return super::tune_command::run(args, level);
    }
    let allocators = allocators(args)?;
    let specs = specs(args, &allocators);
    preflight::refuse_idle_knobs(&specs).map_err(Error::BadInput)?;
    let workers = preflight::check(&specs).map_err(Error::bad)?;
    let mut exec = ProcessExecutor::new(workers, args.counters, Duration::from_secs(300))
        .map_err(|why| Error::counters(args.counters, why))?;
    exec.timeout_hint = "each run has 300 s: lower --min-time or --size".into();
    crate::engine::begin();
    let order_seed = args.program.order_seed.unwrap_or_else(engine::clock_seed);
    // Each set's processes, and one recorded process each: what its calls did.
    let mut progress = Progress::new(specs.len() * (args.processes as usize + 1));
    let budget = Budget {
        warmup_time_ns: 50_000_000,
        ..Budget::short(args.min_time)
    };
    let (mut all, cut) = engine::run_rounds_within(
        &specs,
        &budget,
        args.processes,
        args.max_time,
        order_seed,
        &mut exec,
        &mut progress,
        level,
    );
    if let Some(ran) = cut {
        progress.shorten(specs.len() * (args.processes - ran) as usize);
    }
    for c in all.iter_mut().filter(|c| !c.runs.is_empty()) {
        let what = format!("evidence: {}", c.spec);
        if !engine::record_cell(c, &budget, &mut exec, &mut progress, &what) {
            break;
        }
    }
    progress.clear();
    let rows: Vec<SummaryRow> = all.iter().map(cells::row).collect();
    // Each set against its allocator's defaults (the allocator's first cell).
    let time: Vec<_> = all
        .iter()
        .map(|c| {
            let base = all.iter().find(|b| b.spec.allocator == c.spec.allocator)?;
            (!std::ptr::eq(base, c))
                .then(|| cells::compare(base, c, args.noise_threshold))
                .flatten()
        })
        .collect();
    // Why each set differs from its defaults, from the evidence of both.
    let why: Vec<Option<String>> = all
        .iter()
        .zip(&time)
        .map(|(c, t)| {
            let base = all.iter().find(|b| b.spec.allocator == c.spec.allocator)?;
            let w = cells::why(
                (c, &c.spec.allocator_label()),
                (base, &format!("{}'s defaults", base.spec.allocator_label())),
                t.as_ref()?,
            );
            w.explains().then_some(w.text)
        })
        .collect();
    let stopped_by = crate::ui::interrupt::interrupted()
        .then(|| crate::ui::interrupt::signal_name().unwrap_or("an interrupt"));
    let text = match args.format {
        Format::Table => screen(
            args,
            &allocators,
            &rows,
            (&time, &why),
            order_seed,
            (stopped_by, cut),
            level,
        ),
        format => rows_as(args, format, &rows, stopped_by)?,
    };
    super::print_out(&text)?;
    if stopped_by.is_some() {
        let done: usize = all.iter().map(|c| c.runs.len()).sum();
        return Err(Error::Interrupted(format!(
            "{done} of {} processes ran; sets without any say \"not run\"",
            specs.len() * args.processes as usize
        )));
    }
    if rows.iter().any(|r| !r.status.is_ok()) {
        return Err(Error::RunFailed(
            "some knob sets failed (see their rows)".into(),
        ));
    }
    Ok(())
}

/// The allocators to tune: --allocators (names or installed libraries, no knobs), or
/// every built-in one.
fn allocators(args: &TuneArgs) -> Result<Vec<AllocatorSpec>> {
    let allocators = match &args.allocators {
        Some(list) => crate::model::knobs::parse_spec_list(list).map_err(Error::bad)?,
        None => Allocator::ALL
            .iter()
            .map(|&a| AllocatorSpec::plain(a))
            .collect(),
    };
    if let Some(s) = allocators.iter().find(|s| !s.knobs.is_empty()) {
        return Err(Error::BadInput(format!(
            "--allocators {s}: tune tries its own knob sets; give allocator names (or installed libraries) without knobs"
        )));
    }
    Ok(allocators)
}

/// Every knob set of every allocator (an installed library: its defaults) as a cell.
fn specs(args: &TuneArgs, allocators: &[AllocatorSpec]) -> Vec<RunSpec> {
    allocators
        .iter()
        .flat_map(|a| match &a.library {
            // An installed library: its defaults, beside the built-in allocators' sets.
            Some(_) => vec![a.clone()],
            None => tune::specs(a.allocator),
        })
        .map(|a| RunSpec {
            allocator: a.allocator,
            workload: args.workload,
            variant: args.variant,
            size: args.size,
            threads: 1,
            seed: 42,
            knobs: a.knobs,
            thp: Default::default(),
            library: a.library,
        })
        .collect()
}

/// The table, each set's verdict against its allocator's defaults, and why each set was
/// tried.
fn screen(
    args: &TuneArgs,
    allocators: &[AllocatorSpec],
    rows: &[SummaryRow],
    (time, why): (
        &[Option<crate::analysis::stats::Comparison>],
        &[Option<String>],
    ),
    order_seed: u64,
    (stopped_by, cut): (Option<&str>, Option<u32>),
    level: f64,
) -> String {
    let width = crate::fmt::screen_width();
    let wrap = |text: &str, first: &str, rest: &str| crate::fmt::wrap(text, width, first, rest);
    let mut t = match (stopped_by, cut) {
        (Some(sig), _) => wrap(
            &format!(
                "incomplete: interrupted by {sig}; the rows are from the finished processes (procs) of the {} planned per set",
                args.processes
            ),
            "",
            "  ",
        ),
        (None, Some(ran)) => wrap(
            &format!(
                "incomplete: --max-time {} s left no room for round {} of the {} planned: {ran} processes per set",
                crate::fmt::trim_float(args.max_time),
                ran + 1,
                args.processes
            ),
            "",
            "  ",
        ),
        (None, None) => String::new(),
    };
    let ran = cut.unwrap_or(args.processes);
    // The answer first: what each knob set does against its allocator's defaults.
    t += &wrap(
        &format!(
            "{} {} at {} elements, each knob set against its allocator's defaults:",
            args.workload,
            args.variant,
            group_thousands(args.size as i64)
        ),
        "",
        "  ",
    );
    for line in tune::verdicts(rows, time, why) {
        t += &wrap(&line, "", "    ");
    }
    t.push('\n');
    t.push_str(&table::to_sets_table(&set_names(rows), args.verbose));
    t += &wrap(
        &format!(
            "{ran} processes per set in interleaved rounds (order seed {order_seed}), medians with {} intervals, significant beyond ±{} %{}",
            crate::analysis::stats::level_text(level),
            args.noise_threshold * 100.0,
            crate::analysis::stats::too_few(ran as usize, "processes", level)
                .map_or(String::new(), |few| format!("; {few}"))
        ),
        "",
        "  ",
    );
    t.push_str("\nWhy each set was tried:\n");
    t += &why_tried(allocators, rows, width);
    t
}

/// Why each set was tried, one wrapped line per set, named as the verdicts and the table
/// name it.
fn why_tried(allocators: &[AllocatorSpec], rows: &[SummaryRow], width: usize) -> String {
    let wrap = |text: &str, first: &str, rest: &str| crate::fmt::wrap(text, width, first, rest);
    let mut t = String::new();
    for spec in allocators {
        if let Some(l) = &spec.library {
            t += &wrap(
                &format!(
                    "{}: {} preloaded into the system worker, with its defaults (compared with system's defaults when those ran)",
                    l.name,
                    l.path.display()
                ),
                "  ",
                "      ",
            );
            continue;
        }
        let a = &spec.allocator;
        for (knobs, why) in tune::curated(*a) {
            let label = if knobs.is_empty() {
                a.to_string()
            } else {
                // As the verdicts and the table name the set (its knobs in their order).
                let sorted = |k: &str| {
                    let mut v: Vec<String> = k.split(',').map(str::to_string).collect();
                    v.sort();
                    v
                };
                rows.iter()
                    .filter(|r| r.allocator == *a)
                    .find_map(|r| {
                        let (_, k) = r.allocator_spec.split_once(':')?;
                        (sorted(k) == sorted(knobs)).then(|| r.allocator_spec.clone())
                    })
                    .unwrap_or_else(|| format!("{a}:{knobs}"))
            };
            t += &wrap(&format!("{label}: {why}"), "  ", "      ");
        }
    }
    t
}

/// The rows with each set named as the table shows it
/// ([`super::tune_command::set_name`]: knob sets indented under their allocator).
fn set_names(rows: &[SummaryRow]) -> Vec<SummaryRow> {
    rows.iter()
        .map(|r| {
            let mut r = r.clone();
            r.allocator_spec = super::tune_command::set_name(&r.allocator_spec);
            r
        })
        .collect()
}

/// The rows as Markdown, CSV or JSON (no CI format: tune's rows are knob sets against
/// their allocator's defaults, a search rather than figures to keep a history of).
fn rows_as(
    args: &TuneArgs,
    format: Format,
    rows: &[SummaryRow],
    stopped_by: Option<&str>,
) -> Result<String> {
    // The CLI takes no CI format for tune (its rows are knob sets against their
    // allocator's defaults: a search, not figures to keep a history of).
    let format = format
        .rows()
        .ok_or_else(|| super::tune_command::not_for_tune(format))?;
    let marked = super::compare::CompareRow::marked(
        rows,
        stopped_by.is_none(),
        stopped_by.map(str::to_string),
        args.processes,
    );
    Ok(match (format, stopped_by) {
        (RowFormat::Markdown, Some(sig)) => format!(
            "> **Incomplete:** interrupted by {sig}; the rows are from the finished processes (column processes) of the {} planned per set.\n\n{}",
            args.processes,
            export::render(format, &marked)
        ),
        _ => export::render(format, &marked),
    })
}
