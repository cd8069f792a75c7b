//! `alloclab compare`: one workload under several allocators and variants, each cell
//! measured in several worker processes over interleaved rounds, printed as one screen
//! with intervals and verdicts (or Markdown, CSV, JSON).

use crate::analysis::stats::{half_width_pct, level, level_text, median, median_ci};
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
use std::time::Duration;

pub fn run(args: CompareArgs) -> Result<()> {
    let specs = args.specs()?;
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
    let mut more = |done: u32, cells: &[Cell], progress: &mut Progress| {
        if done < args.processes {
            return true;
        }
        let Some(p) = args.precision else {
            return false;
        };
        let open = cells.iter().any(|c| half_width(c).is_none_or(|h| h > p));
        let go = open && started.elapsed().as_secs_f64() < args.max_time;
        if go {
            progress.set_total((done as usize + 1) * specs.len());
        }
        go
    };
    let all = engine::run_rounds_while(
        &specs,
        &args.budget.budget(),
        order_seed,
        &mut executor,
        &mut progress,
        &mut more,
    );
    progress.clear();
    let load_end = Load::now();
    let done: usize = all.iter().map(|c| c.runs.len()).sum();
    let incomplete = interrupted().then(|| {
        format!(
            "incomplete: Ctrl-C after {done} of {planned} runs; the rows below are from the finished ones"
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
    if !rows.is_empty() {
        super::print_out(&match args.format {
            Format::Table => {
                let lvl = level_text();
                let method = format!(
                    "{} process(es) per cell in interleaved rounds (order seed {order_seed}); p50 and counts are medians over processes, ±p50 its {lvl} interval{}; a ratio is significant when its whole interval of at least {lvl} lies beyond ±{} %",
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
                if let Some(p) = args.precision {
                    let rounds = cells.iter().map(|c| c.runs.len()).max().unwrap_or(0);
                    let open: Vec<String> = cells
                        .iter()
                        .filter_map(|c| {
                            let h = half_width(c);
                            h.is_none_or(|h| h > p).then(|| {
                                format!(
                                    "{} {} {}",
                                    c.spec.allocator_label(),
                                    c.spec.variant,
                                    h.map_or("no interval".into(), |h| format!(
                                        "±{:.1} %",
                                        h * 100.0
                                    ))
                                )
                            })
                        })
                        .collect();
                    lines.push(format!(
                        "precision ±{} %: reached by {} of {} cells after {rounds} rounds ({:.0} s){}",
                        p * 100.0,
                        cells.len() - open.len(),
                        cells.len(),
                        started.elapsed().as_secs_f64(),
                        if open.is_empty() {
                            String::new()
                        } else {
                            format!("; not reached (--max-time {} s): {}", args.max_time, open.join(", "))
                        }
                    ));
                }
                let cpus = std::thread::available_parallelism()
                    .ok()
                    .map(|n| n.get() as u64);
                lines.extend(
                    cells::noise_notes(&load_start, &load_end, cpus, &rows)
                        .into_iter()
                        .map(|n| format!("noisy: {n}")),
                );
                table::compare_screen(&outcomes, &rows, &method, &lines, args.verbose)
            }
            format => export::render(format, &rows),
        })?;
    }
    if let Some(note) = incomplete {
        return Err(Error::Interrupted(note));
    }
    let failed = rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, rows.len(), "cells")
}

/// The half-width of a cell's p50 interval, as a fraction of its median (None without an
/// interval yet).
fn half_width(cell: &Cell) -> Option<f64> {
    let p50s: Vec<f64> = cell.records().map(|(_, r)| r.p50_ns as f64).collect();
    let center = median(&p50s)?;
    let ci = median_ci(&p50s, level())?;
    Some(half_width_pct(center, ci) / 100.0)
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
