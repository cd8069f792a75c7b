//! `alloclab compare`: one workload under several allocators and variants, each cell
//! measured in several worker processes over interleaved rounds, printed as one screen
//! with intervals and verdicts (or Markdown, CSV, JSON).

use crate::analysis::stats::{half_width_pct, level, level_text};
use crate::analysis::{cells, explain};
use crate::cli::CompareArgs;
use crate::counters::load::Load;
use crate::engine::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::{self, table, Format};
use crate::model::record::{Cell, Outcome};
use crate::model::spec::Variant;
use crate::model::summary::SummaryRow;
use crate::ui::interrupt::interrupted;
use crate::ui::progress::Progress;
use std::fmt::Write as _;
use std::time::Duration;

/// Seconds compare measures for at most by default, and with --precision; the
/// precision adaptive rounds aim at by default (a fraction).
pub const MAX_TIME: f64 = 18.0;
pub const DEFAULT_PRECISION: f64 = 0.05;
pub const PRECISION_MAX_TIME: f64 = 60.0;

/// What the adaptive rounds did, for the `rounds:` line.
#[derive(Default)]
struct Adaptive {
    rounds: u32,
    runs: usize,
    /// The last round that was wanted did not fit into --max-time.
    hit_max_time: bool,
}

pub fn run(args: CompareArgs) -> Result<()> {
    let specs = args.specs()?;
    // The page's place is checked before anything runs: a regular file or nothing yet,
    // in a folder the lab may write into that is no other command's results folder.
    if let Some(path) = &args.html {
        crate::export::folder::check_file_target(path)
            .map_err(|why| Error::BadInput(format!("--html: {why}")))?;
    }
    let workers = preflight::check(&specs).map_err(Error::bad)?;
    let mut executor = ProcessExecutor::new(
        workers,
        args.counters,
        Duration::from_secs_f64(args.timeout),
    )
    .map_err(|why| Error::counters(args.counters, why))?;
    crate::engine::begin();
    let order_seed = args.order_seed.unwrap_or_else(engine::clock_seed);
    let planned = specs.len() * args.processes as usize;
    let load_start = Load::now();
    let mut progress = Progress::new(planned);
    let started = std::time::Instant::now();
    // Every cell runs --processes rounds; after that, further rounds go only to the
    // cells of printed comparisons that are still open (undecided, or wider than
    // --precision), while the next round fits into --max-time.
    let precision = args.precision.unwrap_or(DEFAULT_PRECISION);
    let max_time = args.max_time.unwrap_or(if args.precision.is_some() {
        PRECISION_MAX_TIME
    } else {
        MAX_TIME
    });
    let mut adaptive = Adaptive::default();
    let mut more = |done: u32, cells: &[Cell], progress: &mut Progress| {
        if done < args.processes {
            return Some(vec![true; cells.len()]);
        }
        let (open, _) = cells::open_comparisons(cells, args.noise_threshold, Some(precision));
        if open.is_empty() {
            return None;
        }
        let mut part = vec![false; cells.len()];
        for (b, o) in open {
            part[b] = true;
            part[o] = true;
        }
        let runs: usize = cells.iter().map(|c| c.runs.len()).sum();
        let elapsed = started.elapsed().as_secs_f64();
        let per_run = elapsed / runs.max(1) as f64;
        let next = part.iter().filter(|p| **p).count();
        if elapsed + per_run * next as f64 > max_time {
            adaptive.hit_max_time = true;
            return None;
        }
        adaptive.rounds += 1;
        adaptive.runs += next;
        progress.set_total(runs + next);
        Some(part)
    };
    let session = engine::run_rounds_while(
        &specs,
        &args.budget.budget(),
        order_seed,
        &mut executor,
        &mut progress,
        &mut more,
    );
    let order = compare_order_effect(&session);
    let all = session.cells;
    progress.clear();
    let load_end = Load::now();
    let done: usize = all.iter().map(|c| c.runs.len()).sum();
    let incomplete = interrupted().then(|| {
        format!(
            "incomplete: Ctrl-C after {done} of {} runs; the rows below are from the finished ones",
            planned + adaptive.runs
        )
    });
    let cells: Vec<&Cell> = all.iter().filter(|c| !c.runs.is_empty()).collect();
    let outcomes: Vec<Outcome> = cells.iter().flat_map(|c| c.outcomes()).collect();
    let conflicts = engine::checksum_conflicts(&outcomes);
    if !conflicts.is_empty() {
        return Err(Error::RunFailed(conflicts.join("\nerror: ")));
    }
    let mut rows: Vec<SummaryRow> = cells.iter().map(|c| cells::row(c)).collect();
    set_in_place_ratios(&cells, &mut rows, args.noise_threshold);
    if let Some(note) = &incomplete {
        if args.format == Format::Table {
            println!("{note}");
        }
    }
    let mut page_findings: Vec<String> = Vec::new();
    let mut page_method = String::new();
    if !rows.is_empty() {
        super::print_out(&match args.format {
            Format::Table => {
                let lvl = level_text();
                let method = format!(
                    "{} process(es) per cell or more (procs) in interleaved rounds (order seed {order_seed}); p50 and counts are medians over processes, ±p50 its {lvl} interval{}; a ratio is significant when its whole interval of at least {lvl} lies beyond ±{} %",
                    args.processes,
                    coverage_note(&rows),
                    args.noise_threshold * 100.0
                );

                let mut lines = explain::cell_explanations(&cells, &rows, args.noise_threshold);
                lines.extend(
                    cells::disagreements(&rows)
                        .into_iter()
                        .map(|n| format!("note: {n}")),
                );
                lines.push(adaptive_line(
                    &all,
                    &adaptive,
                    &args,
                    precision,
                    max_time,
                    started.elapsed().as_secs_f64(),
                ));
                lines.extend(order.as_ref().and_then(|e| e.describe(level(), "runs")));
                let cpus = std::thread::available_parallelism()
                    .ok()
                    .map(|n| n.get() as u64);
                lines.extend(
                    cells::noise_notes(&load_start, &load_end, cpus, &rows)
                        .into_iter()
                        .map(|n| format!("noisy: {n}")),
                );
                page_findings = lines.clone();
                page_method = method.clone();
                table::compare_screen(&outcomes, &rows, &method, &lines, args.verbose)
            }
            format => export::render(format, &rows),
        })?;
    }
    if let Some(path) = &args.html {
        write_html(path, &outcomes, &rows, &page_method, &page_findings, &args)?;
    }
    if let Some(note) = incomplete {
        return Err(Error::Interrupted(note));
    }
    let failed = rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, rows.len(), "cells")
}

/// compare's report.html: the table's screen, its findings and the cells' charts.
fn write_html(
    path: &std::path::Path,
    outcomes: &[Outcome],
    rows: &[SummaryRow],
    method: &str,
    findings: &[String],
    args: &CompareArgs,
) -> Result<()> {
    use crate::export::html;
    let screen = table::compare_screen(outcomes, rows, method, findings, args.verbose);
    let environment: Vec<String> = screen
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let findings = if findings.is_empty() {
        // Another --format: the findings are computed for the page alone.
        explain::explanations(rows)
    } else {
        findings.to_vec()
    };
    let page = html::Page {
        title: format!(
            "alloclab compare: {}, {} elements",
            args.workload,
            crate::fmt::group_thousands(args.size as i64)
        ),
        environment,
        findings,
        figures: html::cell_figures(rows),
        drawings: Vec::new(),
        text: vec![("The table".into(), screen)],
    };
    crate::export::results::write_atomic(path, page.render().as_bytes())
        .map_err(|e| Error::RunFailed(format!("cannot write --html {}: {e}", path.display())))?;
    eprintln!("report: {}", path.display());
    Ok(())
}

/// Whether a run's p50 depends on the cell that ran before it (by its allocator and
/// variant), from the session's order.
fn compare_order_effect(session: &engine::Session) -> Option<crate::analysis::order::OrderEffect> {
    use crate::analysis::order::{order_effect, runs_in_sequence, PERMUTATIONS, SEED};
    let p50 = |cell: usize, round: u32| {
        session.cells[cell]
            .records()
            .find(|(r, _)| *r == round)
            .map(|(_, rec)| rec.p50_ns as f64)
    };
    let sequence: Vec<(usize, Option<f64>)> = session
        .sequence
        .iter()
        .map(|&(cell, round)| (cell, p50(cell, round)))
        .collect();
    let name = |cell: usize| {
        let s = &session.cells[cell].spec;
        format!("{} {}", s.allocator_label(), s.variant)
    };
    order_effect(&runs_in_sequence(&sequence, &name), PERMUTATIONS, SEED)
}

/// What the adaptive rounds did and what is still open after them.
fn adaptive_line(
    all: &[Cell],
    adaptive: &Adaptive,
    args: &CompareArgs,
    precision: f64,
    max_time: f64,
    seconds: f64,
) -> String {
    let (open, total) = cells::open_comparisons(all, args.noise_threshold, Some(precision));
    let goal = format!(
        " and within ±{} %",
        crate::fmt::trim_float(precision * 100.0)
    );
    let mut s = format!(
        "rounds: {} for every cell, then {} adaptive round(s) ({} runs) for the cells of comparisons still undecided or wider than the precision; {} of {total} printed comparisons decided{goal} after {seconds:.0} s",
        args.processes,
        adaptive.rounds,
        adaptive.runs,
        total - open.len(),
    );
    if !open.is_empty() {
        // The widest first, at most six of them named.
        let mut named: Vec<(f64, String)> = open
            .iter()
            .map(|&(b, o)| {
                let name = |c: &Cell| format!("{} {}", c.spec.allocator_label(), c.spec.variant);
                let h = cells::compare(&all[b], &all[o], args.noise_threshold)
                    .and_then(|c| Some(half_width_pct(c.ratio, c.interval?)));
                let width = h.map_or("no interval".into(), |h| format!("±{h:.1} %"));
                (
                    h.unwrap_or(f64::INFINITY),
                    format!("{} vs {} {width}", name(&all[o]), name(&all[b])),
                )
            })
            .collect();
        named.sort_by(|a, b| b.0.total_cmp(&a.0));
        let more = named.len().saturating_sub(6);
        let mut names: Vec<String> = named.into_iter().take(6).map(|n| n.1).collect();
        if more > 0 {
            names.push(format!("and {more} more"));
        }
        let why = if adaptive.hit_max_time {
            format!(" at --max-time {} s", crate::fmt::trim_float(max_time))
        } else {
            String::new()
        };
        let _ = write!(
            s,
            "; still open{why} ({}, widest first): {}",
            open.len(),
            names.join(", ")
        );
    }
    s
}

/// Where too few processes keep the interval from reaching the level, says what it reaches.
fn coverage_note(rows: &[SummaryRow]) -> String {
    let lowest = rows.iter().filter_map(|r| r.ci_coverage).reduce(f64::min);
    match lowest {
        Some(c) if c < level() => {
            format!(
                " (with this few processes: {:.1} % coverage, so no verdicts; {} processes give {})",
                c * 100.0,
                crate::analysis::stats::rounds_needed(level()),
                level_text()
            )
        }
        _ => String::new(),
    }
}

/// Fills each row's ratio to its allocator's in-place row, from paired rounds.
fn set_in_place_ratios(cells: &[&Cell], rows: &mut [SummaryRow], threshold: f64) {
    for i in 0..rows.len() {
        let base = (0..rows.len()).find(|&j| {
            rows[j].variant == Variant::InPlace
                && rows[j].allocator_spec == rows[i].allocator_spec
                && rows[j].size == rows[i].size
                && rows[j].status.is_ok()
        });
        let Some(base) = base.filter(|&j| j != i && rows[i].status.is_ok()) else {
            continue;
        };
        if let Some(c) = cells::compare(cells[base], cells[i], threshold) {
            let r = &mut rows[i];
            r.vs_in_place = Some(c.ratio);
            r.vs_in_place_ci_low = c.interval.map(|ci| ci.low);
            r.vs_in_place_ci_high = c.interval.map(|ci| ci.high);
            r.vs_in_place_verdict = c.verdict.map(|v| v.words().to_string());
        }
    }
}
