//! `alloclab compare`: one workload under several allocators and variants, each cell
//! measured in several worker processes over interleaved rounds, printed as one screen
//! with intervals and verdicts (or Markdown, CSV, JSON).

use crate::analysis::cells;
use crate::analysis::stats::{half_width_pct, level_text};
use crate::cli::CompareArgs;
use crate::counters::load::Load;
use crate::engine::schedule::Order;
use crate::engine::{self, preflight, ProcessExecutor};
use crate::error::{Error, Result};
use crate::export::{self, ci, table, Format, RowFormat};
use crate::model::record::{Cell, Outcome};
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
    /// --max-time ended the session before all --processes rounds: how many ran.
    planned_cut: Option<u32>,
    /// --no-adaptive: none were to run.
    off: bool,
    /// When the last round began (seconds into the session): the next round is
    /// expected to cost what the last one did (the host's speed moves over a session).
    round_started: f64,
}

/// Why a session ended before its plan did.
#[derive(Clone, Debug, PartialEq)]
enum Stop {
    /// SIGINT (Ctrl-C) or SIGTERM.
    Signal(&'static str),
    /// --max-time (seconds) left no room for the next of the --processes rounds, after
    /// this many; `then` rounds of the largest open comparisons (`then_runs` runs) used
    /// what was left.
    MaxTime {
        rounds: u32,
        max_time: f64,
        then: u32,
        then_runs: usize,
    },
}

/// What ran of the plan, which every output states: the --processes every cell was to
/// get, the runs each cell finished, the runs asked for, and why it stopped early.
#[derive(Clone, Debug)]
struct Ran {
    /// The confidence level of the intervals and verdicts (`--confidence`).
    level: f64,
    planned: u32,
    per_cell: Vec<usize>,
    asked: usize,
    stop: Option<Stop>,
    /// Whether the table shows its procs column (it does when a row has more than one
    /// process): the texts point to it only then.
    procs_column: bool,
}

impl Ran {
    fn complete(&self) -> bool {
        self.stop.is_none()
    }

    fn done(&self) -> usize {
        self.per_cell.iter().sum()
    }

    /// `SIGINT`, `SIGTERM` or `max-time`; None for a complete session.
    fn stopped_by(&self) -> Option<String> {
        self.stop.as_ref().map(|s| match s {
            Stop::Signal(name) => (*name).to_string(),
            Stop::MaxTime { .. } => "max-time".to_string(),
        })
    }

    /// The range of processes per cell: "2", or "1–2".
    fn range(&self) -> String {
        let lo = self.per_cell.iter().min().copied().unwrap_or(0);
        let hi = self.per_cell.iter().max().copied().unwrap_or(0);
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    }

    /// How many cells got how many processes: "every cell has 3 processes", or "14
    /// cells have 2 processes, 10 have 1".
    fn counts(&self) -> String {
        let mut by: std::collections::BTreeMap<usize, usize> = Default::default();
        for &n in &self.per_cell {
            *by.entry(n).or_default() += 1;
        }
        let processes = |n: usize| match n {
            0 => "no process".to_string(),
            1 => "1 process".to_string(),
            n => format!("{n} processes"),
        };
        if by.len() == 1 {
            return format!(
                "every cell has {}",
                processes(self.per_cell.first().copied().unwrap_or(0))
            );
        }
        by.iter()
            .rev()
            .enumerate()
            .map(|(i, (&n, &cells))| match (i, cells) {
                (0, 1) => format!("1 cell has {}", processes(n)),
                (0, _) => format!("{cells} cells have {}", processes(n)),
                (_, 1) if n == 0 => "1 has none".to_string(),
                (_, 1) => format!("1 has {n}"),
                _ if n == 0 => format!("{cells} have none"),
                _ => format!("{cells} have {n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// " (procs)" where the table shows that column.
    fn procs(&self) -> &'static str {
        if self.procs_column {
            " (procs)"
        } else {
            ""
        }
    }

    /// The line that says the outputs are incomplete, what ran of the plan and why; None
    /// for a complete session.
    fn note(&self) -> Option<String> {
        let planned = self.planned;
        let procs = self.procs();
        Some(match self.stop.as_ref()? {
            Stop::Signal(name) => format!(
                "incomplete: interrupted by {name} after {} of {} runs; of the {planned} processes planned per cell, {}{procs}; the rows are from the finished runs",
                self.done(),
                self.asked,
                self.counts()
            ),
            Stop::MaxTime {
                rounds,
                max_time,
                then,
                then_runs,
            } => format!(
                "incomplete: --max-time {} s left no room for round {} of the {planned} planned; of the {planned} processes planned per cell, {}{procs}, and {}",
                crate::fmt::trim_float(*max_time),
                rounds + 1,
                self.counts(),
                then_words(*then, *then_runs, "no adaptive rounds ran")
            ),
        })
    }

    /// The table's processes clause: "6 process(es) per cell or more", or what ran of
    /// the plan.
    fn processes_clause(&self) -> String {
        let min = self.per_cell.iter().min().copied().unwrap_or(0);
        let max = self.per_cell.iter().max().copied().unwrap_or(0);
        if self.complete() && max <= self.planned as usize {
            // No adaptive round added any.
            format!("{} process(es) per cell (procs)", self.planned)
        } else if self.complete() {
            format!("{} process(es) per cell or more (procs)", self.planned)
        } else if min >= self.planned as usize {
            // Stopped during the adaptive rounds: every planned process ran.
            format!(
                "{} process(es) per cell: all {} planned, then adaptive rounds cut short ({}incomplete)",
                self.range(),
                self.planned,
                if self.procs_column { "procs; " } else { "" }
            )
        } else {
            format!(
                "{} of the {} planned process(es) per cell ({}incomplete)",
                self.range(),
                self.planned,
                if self.procs_column { "procs; " } else { "" }
            )
        }
    }

    /// The start of the `rounds:` line: the --processes rounds that ran, and the
    /// adaptive ones.
    fn rounds_clause(&self, adaptive: &Adaptive) -> String {
        let planned = self.planned;
        let min = self.per_cell.iter().min().copied().unwrap_or(0);
        let adaptive_runs = self
            .done()
            .saturating_sub(planned as usize * self.per_cell.len());
        match &self.stop {
            Some(Stop::MaxTime {
                rounds,
                max_time,
                then,
                then_runs,
            }) => format!(
                "{rounds} of the {planned} planned for every cell (round {} would have ended after --max-time {} s); {}",
                rounds + 1,
                crate::fmt::trim_float(*max_time),
                then_words(*then, *then_runs, "no adaptive rounds")
            ),
            Some(Stop::Signal(name)) if min < planned as usize => format!(
                "interrupted by {name} during the {planned} planned: {}; no adaptive rounds",
                self.counts()
            ),
            Some(Stop::Signal(name)) => format!(
                "{planned} for every cell, then {} adaptive round(s) ({adaptive_runs} runs finished) for the cells of comparisons still undecided or wider than the precision, the last interrupted by {name}",
                adaptive.rounds
            ),
            None if adaptive.off => {
                format!("{planned} for every cell; no adaptive rounds (--no-adaptive)")
            }
            None => format!(
                "{planned} for every cell, then {} adaptive round(s) ({} runs) for the cells of comparisons still undecided or wider than the precision",
                adaptive.rounds, adaptive.runs
            ),
        }
    }
}

/// What ran after --max-time cut the --processes rounds: "then 2 round(s) (4 runs) of
/// the largest open comparisons, as many as fitted", or `none`.
fn then_words(rounds: u32, runs: usize, none: &str) -> String {
    if rounds == 0 {
        none.to_string()
    } else {
        format!("then {rounds} round(s) ({runs} runs) of the largest open comparisons, as many as fitted")
    }
}

/// compare's row in JSON and CSV: the summary row and what ran of the session's plan
/// (the same on every row, so that a row read alone still says it).
#[derive(serde::Serialize)]
pub(crate) struct CompareRow {
    #[serde(flatten)]
    row: SummaryRow,
    /// True only when every cell got its --processes processes and nothing stopped the
    /// session early.
    complete: bool,
    /// `SIGINT`, `SIGTERM` or `max-time` when the session stopped early.
    stopped_by: Option<String>,
    /// The processes (--processes rounds) every cell was to get; `processes` says how
    /// many it got.
    processes_planned: u32,
    /// How many workers ran at once (--jobs), and the CPU every worker was kept on
    /// (--cpu): what `diff` checks two sides were measured alike by.
    jobs: u32,
    cpu: Option<u32>,
}

impl CompareRow {
    fn rows(rows: &[SummaryRow], ran: &Ran, args: &CompareArgs) -> Vec<CompareRow> {
        let mut out = Self::marked(rows, ran.complete(), ran.stopped_by(), ran.planned);
        for r in &mut out {
            (r.jobs, r.cpu) = (args.jobs, args.cpu);
        }
        out
    }

    /// Rows of a session of cells (compare's, tune's) with what ran of its plan.
    pub(crate) fn marked(
        rows: &[SummaryRow],
        complete: bool,
        stopped_by: Option<String>,
        processes_planned: u32,
    ) -> Vec<CompareRow> {
        rows.iter()
            .map(|r| CompareRow {
                row: r.clone(),
                complete,
                stopped_by: stopped_by.clone(),
                processes_planned,
                jobs: 1,
                cpu: None,
            })
            .collect()
    }
}

impl export::Rows for CompareRow {
    fn empty() -> Self {
        CompareRow {
            row: SummaryRow::empty(),
            complete: false,
            stopped_by: None,
            processes_planned: 0,
            jobs: 1,
            cpu: None,
        }
    }
    fn table(rows: &[Self]) -> String {
        table::to_table(&rows.iter().map(|r| r.row.clone()).collect::<Vec<_>>())
    }
    fn markdown(rows: &[Self]) -> String {
        table::to_markdown(&rows.iter().map(|r| r.row.clone()).collect::<Vec<_>>())
    }
}

/// Refuses a plan of more than `max_runs` runs, before anything runs, with its size
/// and the least time it takes with `jobs` workers at once.
fn check_plan(
    cells: usize,
    processes: u32,
    budget: &crate::model::budget::Budget,
    max_runs: u64,
    jobs: u32,
) -> Result<()> {
    let runs = cells as u64 * u64::from(processes);
    if runs <= max_runs {
        return Ok(());
    }
    // Batches of `jobs` runs at once, each at least its warm-up and measured time.
    let batches = runs.div_ceil(u64::from(jobs.max(1)));
    let seconds = batches as f64 * (budget.warmup_time_ns + budget.min_time_ns) as f64 / 1e9;
    Err(Error::BadInput(format!(
        "{} cells × --processes {} = {} runs, more than --max-runs {} allows (they would take at least {}); give fewer --processes, allocators or variants, or raise --max-runs to run it on purpose",
        cells,
        crate::fmt::group_thousands(i64::from(processes)),
        crate::fmt::group_thousands(runs as i64),
        crate::fmt::group_thousands(max_runs as i64),
        crate::fmt::fmt_duration(seconds)
    )))
}

pub fn run(args: CompareArgs, level: f64) -> Result<()> {
    let specs = args.specs()?;
    let mut executor = prepare(&args, &specs)?;
    crate::engine::begin();
    let m = measure(&args, &specs, &mut executor, level);
    let cells: Vec<&Cell> = m.all.iter().filter(|c| !c.runs.is_empty()).collect();
    let outcomes: Vec<Outcome> = cells.iter().flat_map(|c| c.outcomes()).collect();
    let conflicts = engine::checksum_conflicts(&outcomes);
    if !conflicts.is_empty() {
        return Err(Error::RunFailed(conflicts.join("\nerror: ")));
    }
    let mut rows: Vec<SummaryRow> = cells.iter().map(|c| cells::row(c)).collect();
    cells::set_in_place_ratios(&cells, &mut rows, args.noise_threshold);
    let mut ran = m.ran.clone();
    ran.procs_column = rows.iter().any(|r| r.processes.unwrap_or(1) > 1);
    let incomplete = ran.note();
    let mut answer = crate::analysis::answer::of_cells(&cells, &rows, args.noise_threshold, None);
    answer.price = crate::analysis::price::beside_time(&cells, args.noise_threshold, None);
    let said = said(&args, &m, &ran, &answer, (&cells, &rows));
    if !rows.is_empty() {
        let text = render(
            &args,
            &answer,
            &ran,
            &outcomes,
            &rows,
            &said,
            incomplete.as_deref(),
        )?;
        super::print_out(&text)?;
    }
    if let Some(path) = &args.html {
        write_html(
            path,
            &answer,
            &outcomes,
            &rows,
            &said.method,
            &said.lines,
            incomplete.as_deref(),
            &args,
        )?;
    }
    finish(incomplete.as_deref(), &ran, &rows)
}

/// Checks the plan before anything runs (the page's target, the budget, the workers)
/// and opens the executor with its counters.
fn prepare(args: &CompareArgs, specs: &[crate::model::run::RunSpec]) -> Result<ProcessExecutor> {
    // The page's place is checked before anything runs: a regular file or nothing yet,
    // in a folder the lab may write into that is no other command's results folder.
    if let Some(path) = &args.html {
        crate::export::folder::check_file_target(path)
            .map_err(|why| Error::BadInput(format!("--html: {why}")))?;
    }
    check_plan(
        specs.len(),
        args.processes,
        &args.budget.budget(),
        args.max_runs,
        args.jobs,
    )?;
    if let Some(cpu) = args.cpu {
        crate::counters::conditions::check_cpu(cpu)
            .map_err(|why| Error::BadInput(format!("--cpu {cpu}: {why}")))?;
    }
    preflight::refuse_idle_knobs(specs).map_err(Error::BadInput)?;
    let workers = preflight::check(specs).map_err(Error::bad)?;
    let mut executor = ProcessExecutor::new(
        workers,
        args.counters,
        Duration::from_secs_f64(args.timeout),
    )
    .map_err(|why| Error::counters(args.counters, why))?;
    executor.cpu = args.cpu;
    executor.jobs = job_cpus(args)?;
    executor.layout = args.layout;
    Ok(executor)
}

/// The CPUs of `--jobs N`'s workers: the first N this process may use; none for one job.
fn job_cpus(args: &CompareArgs) -> Result<Vec<u32>> {
    let jobs = args.jobs;
    if jobs <= 1 {
        return Ok(Vec::new());
    }
    if args.cpu.is_some() {
        return Err(Error::BadInput(format!(
            "--jobs {jobs} keeps each worker on a CPU of its own, --cpu every worker on one: give one of them"
        )));
    }
    if matches!(args.order, crate::cli::RoundOrder::Blocked) {
        return Err(Error::BadInput(format!(
            "--jobs {jobs} with --order blocked would run the same cells side by side in every round, a fixed partner in every ratio: use --order shuffled (the default) with --jobs"
        )));
    }
    let allowed = crate::counters::conditions::allowed_cpus().map_err(|e| {
        Error::BadInput(format!(
            "--jobs {jobs}: cannot read which CPUs this process may use: {e}"
        ))
    })?;
    if allowed.len() < jobs as usize {
        return Err(Error::BadInput(format!(
            "--jobs {jobs}: this process may use {} CPU(s) ({}), and each job needs one of its own: give --jobs {} or less",
            allowed.len(),
            crate::counters::conditions::cpu_list(&allowed),
            allowed.len()
        )));
    }
    Ok(allowed[..jobs as usize].to_vec())
}

/// What a session measured: every cell, how its rounds went, and the machine around it.
struct Measured {
    all: Vec<Cell>,
    order: Option<crate::analysis::order::OrderEffect>,
    adaptive: Adaptive,
    ran: Ran,
    order_seed: u64,
    order_words: String,
    precision: f64,
    max_time: f64,
    seconds: f64,
    load_start: Load,
    load_end: Load,
}

/// The rounds of a session: every cell --processes rounds, then further rounds only for
/// the cells of printed comparisons still open (undecided, or wider than --precision),
/// while the next round fits into --max-time.
fn measure(
    args: &CompareArgs,
    specs: &[crate::model::run::RunSpec],
    executor: &mut ProcessExecutor,
    level: f64,
) -> Measured {
    let order_seed = args.order_seed.unwrap_or_else(engine::clock_seed);
    let planned = specs.len() * args.processes as usize;
    let load_start = Load::now();
    let mut progress = Progress::new(planned);
    let started = std::time::Instant::now();
    let precision = args.precision.unwrap_or(DEFAULT_PRECISION);
    let max_time = args.max_time.unwrap_or(if args.precision.is_some() {
        PRECISION_MAX_TIME
    } else {
        MAX_TIME
    });
    let mut adaptive = Adaptive {
        off: args.no_adaptive,
        ..Adaptive::default()
    };
    let mut more = |done: u32, cells: &[Cell], progress: &mut Progress| {
        next_round(
            args,
            &mut adaptive,
            (precision, max_time),
            started.elapsed().as_secs_f64(),
            done,
            cells,
            progress,
        )
    };
    let (round_order, order_words) = round_order(args.order, specs);
    let session = engine::run_rounds_while(
        specs,
        &args.budget.budget(),
        order_seed,
        round_order,
        level,
        executor,
        &mut progress,
        &mut more,
    );
    let order = compare_order_effect(&session);
    let mut all = session.cells;
    // What each measured cell's calls and faults did: one recorded process each.
    let measured: Vec<usize> = (0..all.len())
        .filter(|&i| !all[i].runs.is_empty())
        .collect();
    progress.add_runs(measured.len());
    for i in measured {
        let what = format!("evidence: {}", all[i].spec);
        if !engine::record_cell(
            &mut all[i],
            &args.budget.budget(),
            executor,
            &mut progress,
            &what,
        ) {
            break;
        }
    }
    progress.clear();
    let ran = Ran {
        level,
        planned: args.processes,
        per_cell: all.iter().map(|c| c.runs.len()).collect(),
        asked: planned + adaptive.runs,
        stop: if interrupted() {
            Some(Stop::Signal(
                crate::ui::interrupt::signal_name().unwrap_or("a signal"),
            ))
        } else {
            adaptive.planned_cut.map(|rounds| Stop::MaxTime {
                rounds,
                max_time,
                then: adaptive.rounds,
                then_runs: adaptive.runs,
            })
        },
        procs_column: false,
    };
    Measured {
        all,
        order,
        adaptive,
        ran,
        order_seed,
        order_words,
        precision,
        max_time,
        seconds: started.elapsed().as_secs_f64(),
        load_start,
        load_end: Load::now(),
    }
}

/// Which cells the next round runs (None: the session is over): every cell until
/// --processes rounds ran, as long as each round fits into --max-time at the last
/// round's cost; then only the cells of the comparisons still open. Rounds are dropped,
/// not processes shortened: shortened processes measured another ratio under load
/// (docs/method.md), and 4 or 5 rounds still decide, unpaired. When a whole round no
/// longer fits before --processes rounds ran (a slow or loaded host), the time left
/// goes to the open comparisons, largest ratio first, as many as fit: a large effect
/// then reaches the rounds that decide it instead of being left without a verdict.
fn next_round(
    args: &CompareArgs,
    adaptive: &mut Adaptive,
    (precision, max_time): (f64, f64),
    elapsed: f64,
    done: u32,
    cells: &[Cell],
    progress: &mut Progress,
) -> Option<Vec<bool>> {
    let runs: usize = cells.iter().map(|c| c.runs.len()).sum();
    let last_round = elapsed - adaptive.round_started;
    adaptive.round_started = elapsed;
    if done < args.processes && adaptive.planned_cut.is_none() {
        // The first round always runs (nothing to estimate a round from before it);
        // each later one only when it ends within --max-time, at the last round's cost.
        if done == 0 || elapsed + last_round <= max_time {
            return Some(vec![true; cells.len()]);
        }
        adaptive.planned_cut = Some(done);
    }
    if args.no_adaptive {
        progress.set_total(runs);
        return None;
    }
    let (mut open, _) = cells::open_comparisons(cells, args.noise_threshold, Some(precision));
    if open.is_empty() {
        progress.set_total(runs);
        return None;
    }
    // A run's cost: the last round's, per run in it.
    let last_runs = cells
        .iter()
        .filter(|c| c.runs.last().is_some_and(|(r, _)| *r + 1 == done))
        .count()
        .max(1);
    let per_run = last_round / last_runs as f64;
    let mut part = vec![false; cells.len()];
    if adaptive.planned_cut.is_some() {
        // Each variant against its allocator's in-place cell first (the question the
        // answer leads with), then the rest; within each, the largest ratio first (either
        // way), those not yet compared (a cell without a run) last. The first must reach
        // the rounds that decide it: each of the rounds
        // it still needs takes an equal share of the time left, and a round holds as
        // many comparisons as fit into its share (the largest always, if it fits at all).
        let size = |&(b, o): &(usize, usize)| {
            cells::compare(&cells[b], &cells[o], args.noise_threshold)
                .map_or(0.0, |c| c.ratio.ln().abs())
        };
        let in_place = |&(b, o): &(usize, usize)| {
            cells[b].spec.variant == crate::model::spec::Variant::InPlace
                && cells[b].spec.allocator_label() == cells[o].spec.allocator_label()
        };
        open.sort_by(|x, y| {
            in_place(y)
                .cmp(&in_place(x))
                .then(size(y).total_cmp(&size(x)))
        });
        let level = cells.first().map_or(0.95, |c| c.level);
        let have = open
            .first()
            .map_or(0, |&(b, o)| cells[b].runs.len().min(cells[o].runs.len()));
        let rounds_needed = crate::analysis::stats::rounds_to_decide(level)
            .saturating_sub(have)
            .max(1);
        let share = (max_time - elapsed) / rounds_needed as f64;
        for (b, o) in open {
            let with = part[b] as usize + part[o] as usize;
            let count = part.iter().filter(|p| **p).count() + 2 - with;
            let first = count == 2 && with == 0;
            if per_run * count as f64 > share && !first {
                break;
            }
            part[b] = true;
            part[o] = true;
        }
    } else {
        for (b, o) in open {
            part[b] = true;
            part[o] = true;
        }
    }
    let next = part.iter().filter(|p| **p).count();
    if next == 0 || elapsed + per_run * next as f64 > max_time {
        adaptive.hit_max_time = true;
        progress.set_total(runs);
        return None;
    }
    adaptive.rounds += 1;
    adaptive.runs += next;
    progress.set_total(runs + next);
    Some(part)
}

/// The order of the cells within a round, and how the method line says it.
fn round_order(
    order: crate::cli::RoundOrder,
    specs: &[crate::model::run::RunSpec],
) -> (Order, String) {
    match order {
        crate::cli::RoundOrder::Shuffled => (Order::Shuffled, "shuffled order".to_string()),
        crate::cli::RoundOrder::Blocked => {
            // One block per allocator spec, numbered in the order the specs first appear.
            let mut labels: Vec<String> = Vec::new();
            let blocks = specs
                .iter()
                .map(|s| {
                    let label = s.allocator_label();
                    labels.iter().position(|l| *l == label).unwrap_or_else(|| {
                        labels.push(label);
                        labels.len() - 1
                    })
                })
                .collect();
            (
                Order::Blocked(blocks),
                "each allocator's cells together, reversed every second round".to_string(),
            )
        }
    }
}

/// What the screens and the page say besides the answer: the method, the findings'
/// lines, and where the notes among them begin.
struct Said {
    method: String,
    lines: Vec<String>,
    explained: usize,
}

fn said(
    args: &CompareArgs,
    m: &Measured,
    ran: &Ran,
    answer: &crate::analysis::answer::Answer,
    (cells, rows): (&[&Cell], &[SummaryRow]),
) -> Said {
    let lvl = level_text(ran.level);
    let method = format!(
        "{} in interleaved rounds ({}, order seed {}){}; {}; p50 and counts are medians over processes, ±p50 its {lvl} interval{}; a ratio is significant when its whole interval of at least {lvl} lies beyond ±{} %",
        ran.processes_clause(),
        m.order_words,
        m.order_seed,
        match (args.cpu, args.jobs) {
            (Some(c), _) => format!(", every worker kept on CPU {c} (--cpu)"),
            (None, j) if j > 1 => format!(
                ", up to {j} workers at once, each kept on a CPU of its own (--jobs {j}: absolute times include what they share)"
            ),
            _ => String::new(),
        },
        args.layout.words(),
        coverage_note(rows, ran.level),
        args.noise_threshold * 100.0
    );
    // Every comparison, as the answer words it.
    let mut lines: Vec<String> = answer.all_items().into_iter().map(|i| i.text).collect();
    lines.extend(crate::analysis::modes::behaviour_notes(rows));
    // The lines after these are notes (disagreements, rounds, order, noise).
    let explained = lines.len();
    lines.extend(
        cells::disagreements(rows)
            .into_iter()
            .map(|n| format!("note: {n}")),
    );
    lines.push(adaptive_line(
        &m.all,
        &m.adaptive,
        ran,
        args,
        m.precision,
        m.max_time,
        m.seconds,
    ));
    lines.extend(m.order.as_ref().and_then(|e| e.describe(ran.level, "runs")));
    lines.extend(next_run_line(&m.all));
    if args.jobs > 1 {
        lines.push(format!(
            "note: --jobs {0}: {0} workers ran at once, each on a CPU of its own, and shared the memory bandwidth and caches: absolute times include that, and ratios can move beyond their intervals (docs/compare.md measures it); confirm a ratio you act on with --jobs 1",
            args.jobs
        ));
    }
    let cpus = std::thread::available_parallelism()
        .ok()
        .map(|n| n.get() as u64);
    lines.extend(
        cells::noise_notes(&m.load_start, &m.load_end, cpus, rows)
            .into_iter()
            .chain(cells::disturbed(cells))
            .map(|n| format!("noisy: {n}")),
    );
    Said {
        method,
        lines,
        explained,
    }
}

/// How much a second run may differ, from the drift this session shows between the
/// earlier and later halves of its rounds: the median move over the printed comparisons
/// and the largest, named. The intervals hold this session's processes; a second run
/// adds the host's drift (docs/method.md measures how often the next run's ratio falls
/// inside this run's interval).
fn next_run_line(all: &[Cell]) -> Option<String> {
    let halves = cells::halves(all);
    let moves: Vec<f64> = halves.iter().map(|h| h.apart()).collect();
    let median = crate::analysis::stats::median(&moves)?;
    let most = halves
        .iter()
        .max_by(|a, b| a.apart().total_cmp(&b.apart()))?;
    let name = |c: &Cell| format!("{} {}", c.spec.allocator_label(), c.spec.variant);
    Some(format!(
        "next run: this session's halves put its ratios a median {:.0} % apart, at most {:.0} % ({} vs {}: {:.2}x, then {:.2}x); a second run may differ as much (docs/method.md)",
        100.0 * median,
        100.0 * most.apart(),
        name(&all[most.other]),
        name(&all[most.base]),
        most.early,
        most.late
    ))
}

/// The session in the format asked for: the answer-first screen (or the full one with
/// --verbose), Markdown, CSV, JSON or a CI format.
fn render(
    args: &CompareArgs,
    answer: &crate::analysis::answer::Answer,
    ran: &Ran,
    outcomes: &[Outcome],
    rows: &[SummaryRow],
    said: &Said,
    incomplete: Option<&str>,
) -> Result<String> {
    let out = CompareRow::rows(rows, ran, args);
    Ok(match args.format {
        Format::Table if args.verbose => {
            let screen = table::compare_screen(outcomes, rows, &said.method, &said.lines, true);
            match incomplete {
                Some(note) => format!("{note}\n{screen}"),
                None => screen,
            }
        }
        Format::Table => crate::export::answer::compare_screen(
            answer,
            outcomes,
            rows,
            &format!(
                "{}, {}, {}",
                args.workload,
                args.workload.size_words(args.size),
                processes_range(&ran.per_cell)
            ),
            &said.method,
            &said.lines[said.explained..],
            incomplete,
        ),
        Format::Markdown => match incomplete {
            Some(note) => format!(
                "> **Incomplete:** {}\n\n{}",
                note.trim_start_matches("incomplete: "),
                export::render(RowFormat::Markdown, &out)
            ),
            None => export::render(RowFormat::Markdown, &out),
        },
        Format::Csv => export::render(RowFormat::Csv, &out),
        Format::Json => export::render(RowFormat::Json, &out),
        format @ (Format::Bmf | Format::GithubActionBenchmark) => {
            ci_text(format, rows, outcomes, ran, args.jobs)?
        }
    })
}

/// How the session ends: an interrupt is the error it is (after the rows were printed),
/// a cut session says so, and failed cells fail the command.
fn finish(incomplete: Option<&str>, ran: &Ran, rows: &[SummaryRow]) -> Result<()> {
    match (incomplete, &ran.stop) {
        (Some(note), Some(Stop::Signal(_))) => {
            // "interrupted by SIGINT: after 42 of … runs; …" (the signal is named once,
            // by the error's own prefix).
            let rest = note.trim_start_matches("incomplete: interrupted ");
            let rest = match rest.strip_prefix("by ") {
                Some(r) => r.split_once(' ').map_or(r, |(_, after)| after),
                None => rest,
            };
            return Err(Error::Interrupted(rest.to_string()));
        }
        (Some(note), _) => crate::fmt::say!("{note}"),
        _ => {}
    }
    let failed = rows.iter().filter(|r| !r.status.is_ok()).count();
    super::failed_runs(failed, rows.len(), "cells")
}

/// "6 processes per cell", or after adaptive rounds "9 to 14 processes per cell".
fn processes_range(per_cell: &[usize]) -> String {
    let min = per_cell.iter().min().copied().unwrap_or(0);
    let max = per_cell.iter().max().copied().unwrap_or(0);
    if min == max {
        crate::fmt::counted(min, "process per cell", "processes per cell")
    } else {
        format!("{min} to {max} processes per cell")
    }
}

/// compare's rows in a CI service's format (`--format bmf` or `github-action-benchmark`),
/// with the testbed, the allocators' versions and what the bounds are on stderr. The
/// testbed is the machine the workers ran on (the first record's environment) and, with
/// `--jobs` above 1, how many ran at once.
fn ci_text(
    format: Format,
    rows: &[SummaryRow],
    outcomes: &[Outcome],
    ran: &Ran,
    jobs: u32,
) -> Result<String> {
    let env = outcomes
        .iter()
        .find_map(|o| o.result.as_ref().ok())
        .map(|r| r.env.clone())
        .unwrap_or_else(crate::counters::envinfo::Environment::of_driver);
    let mut testbed = ci::Testbed::of(&env);
    // Workers at once measure otherwise than one at a time: another history.
    if jobs > 1 {
        testbed.placement = format!("jobs={jobs}");
    }
    let session = ci::Session {
        command: "compare",
        complete: ran.complete(),
        stopped_by: ran.stopped_by(),
        replicates: "processes",
        planned: ran.planned,
        level: ran.level,
    };
    let benches = ci::cell_benchmarks(rows, &session, &testbed);
    super::ci_output(format, &benches, &session, &testbed)
}

/// compare's report.html: the table's screen, its findings and the cells' charts; an
/// incomplete session's note heads the title, the environment, the findings and the
/// table.
#[allow(clippy::too_many_arguments)]
fn write_html(
    path: &std::path::Path,
    answer: &crate::analysis::answer::Answer,
    outcomes: &[Outcome],
    rows: &[SummaryRow],
    method: &str,
    findings: &[String],
    incomplete: Option<&str>,
    args: &CompareArgs,
) -> Result<()> {
    use crate::export::html;
    let mut screen = table::compare_screen(outcomes, rows, method, findings, args.verbose);
    if let Some(note) = incomplete {
        screen = format!("{note}\n{screen}");
    }
    let environment: Vec<String> = screen
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();
    let mut findings = findings.to_vec();
    if let Some(note) = incomplete {
        findings.insert(0, note.to_string());
    }
    let page = html::Page {
        title: format!(
            "{}alloclab compare: {}, {}",
            if incomplete.is_some() {
                "INCOMPLETE: "
            } else {
                ""
            },
            args.workload,
            args.workload.size_words(args.size)
        ),
        environment,
        answer: {
            let mut items: Vec<_> = answer
                .items()
                .into_iter()
                .filter(|i| match &i.figures {
                    Some(crate::analysis::findings::Figures::Difference(d)) => matches!(
                        d.comparison.verdict,
                        Some(
                            crate::analysis::stats::Verdict::Slower
                                | crate::analysis::stats::Verdict::Faster
                        )
                    ),
                    _ => true,
                })
                .collect();
            let more = items.len().saturating_sub(crate::export::headlines::MOST);
            items.truncate(crate::export::headlines::MOST);
            crate::export::headlines::Answer {
                items,
                more,
                incomplete: incomplete.map(str::to_string),
                price: answer.price.clone(),
            }
        },
        sections: crate::export::index::heat_table(answer, args.processes, "every")
            .into_iter()
            .collect(),
        findings,
        figures: html::cell_figures(rows),
        drawings: Vec::new(),
        text: vec![("The table".into(), screen)],
        markdown: Vec::new(),
    };
    crate::export::results::write_atomic(path, page.render().as_bytes())
        .map_err(|e| Error::RunFailed(format!("cannot write --html {}: {e}", path.display())))?;
    crate::fmt::say!("report: {}", path.display());
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
    ran: &Ran,
    args: &CompareArgs,
    precision: f64,
    max_time: f64,
    seconds: f64,
) -> String {
    // Without adaptive rounds no precision was aimed at: only decided is said.
    let aim = (!args.no_adaptive).then_some(precision);
    let (open, total) = cells::open_comparisons(all, args.noise_threshold, aim);
    let goal = match aim {
        Some(p) => format!(" and within ±{} %", crate::fmt::trim_float(p * 100.0)),
        None => String::new(),
    };
    let mut s = format!(
        "rounds: {}; {} of {total} printed comparisons decided{goal} after {seconds:.0} s",
        ran.rounds_clause(adaptive),
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
        let why = if adaptive.hit_max_time || adaptive.planned_cut.is_some() {
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

/// Where too few processes keep a cell's interval from reaching the level, says what it
/// reaches, and whether its comparisons can still decide (unpaired, from 4 at 95 %).
fn coverage_note(rows: &[SummaryRow], level: f64) -> String {
    let lowest = rows.iter().filter_map(|r| r.ci_coverage).reduce(f64::min);
    let fewest = rows.iter().filter_map(|r| r.processes).min().unwrap_or(0) as usize;
    let decide = crate::analysis::stats::rounds_to_decide(level);
    match lowest {
        Some(c) if c < level && fewest < decide => format!(
            " (with this few processes: {:.1} % coverage, so no verdicts; {decide} processes give {})",
            c * 100.0,
            level_text(level)
        ),
        Some(c) if c < level => format!(
            " (with this few processes a cell's own interval covers {:.1} %; its comparisons reach {} unpaired, from {decide} processes a side)",
            c * 100.0,
            level_text(level)
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(per_cell: &[usize], stop: Option<Stop>) -> Ran {
        Ran {
            level: crate::analysis::stats::DEFAULT_LEVEL,
            planned: 1000,
            per_cell: per_cell.to_vec(),
            asked: 24_000,
            stop,
            procs_column: true,
        }
    }

    /// 42 runs of a 24-cell plan of 1,000 processes each, then Ctrl-C: no output may
    /// say "1000 process(es) per cell" or "1000 for every cell".
    #[test]
    fn an_interrupted_session_says_what_ran_in_every_line() {
        let mut per_cell = vec![2; 18];
        per_cell.extend([1; 6]);
        assert_eq!(
            ran(&[1, 1, 0, 0], Some(Stop::Signal("SIGINT"))).counts(),
            "2 cells have 1 process, 2 have none"
        );
        let r = ran(&per_cell, Some(Stop::Signal("SIGINT")));
        assert!(!r.complete());
        assert_eq!(r.stopped_by().as_deref(), Some("SIGINT"));
        assert_eq!(
            r.note().unwrap(),
            "incomplete: interrupted by SIGINT after 42 of 24000 runs; of the 1000 processes planned per cell, 18 cells have 2 processes, 6 have 1 (procs); the rows are from the finished runs"
        );
        assert_eq!(
            r.processes_clause(),
            "1–2 of the 1000 planned process(es) per cell (procs; incomplete)"
        );
        let line = r.rounds_clause(&Adaptive::default());
        assert_eq!(
            line,
            "interrupted by SIGINT during the 1000 planned: 18 cells have 2 processes, 6 have 1; no adaptive rounds"
        );
        // Every row carries the mark, in JSON and CSV alike.
        let rows = CompareRow::marked(
            &[SummaryRow::empty()],
            r.complete(),
            r.stopped_by(),
            r.planned,
        );
        let json: serde_json::Value =
            serde_json::from_str(&export::render(RowFormat::Json, &rows)).unwrap();
        assert_eq!(json[0]["complete"], false);
        assert_eq!(json[0]["stopped_by"], "SIGINT");
        assert_eq!(json[0]["processes_planned"], 1000);
        let csv = export::render(RowFormat::Csv, &rows);
        let mut reader = csv::Reader::from_reader(csv.as_bytes());
        let header = reader.headers().unwrap().clone();
        let record = reader.records().next().unwrap().unwrap();
        let col = |name: &str| {
            let i = header.iter().position(|h| h == name).unwrap();
            record[i].to_string()
        };
        assert_eq!(
            (col("complete"), col("stopped_by"), col("processes_planned")),
            ("false".into(), "SIGINT".into(), "1000".into())
        );
        // Interrupted in the adaptive rounds: the planned ones are said as complete.
        let mut r = ran(&[7, 6, 8], Some(Stop::Signal("SIGTERM")));
        r.planned = 6;
        let adaptive = Adaptive {
            rounds: 2,
            runs: 5,
            ..Adaptive::default()
        };
        assert_eq!(
            r.rounds_clause(&adaptive),
            "6 for every cell, then 2 adaptive round(s) (3 runs finished) for the cells of comparisons still undecided or wider than the precision, the last interrupted by SIGTERM"
        );
        // Never "6–8 of the 6 planned".
        assert_eq!(
            r.processes_clause(),
            "6–8 process(es) per cell: all 6 planned, then adaptive rounds cut short (procs; incomplete)"
        );
    }

    #[test]
    fn a_session_cut_by_max_time_says_which_round_did_not_fit() {
        let r = ran(
            &[3; 4],
            Some(Stop::MaxTime {
                rounds: 3,
                max_time: 18.0,
                then: 0,
                then_runs: 0,
            }),
        );
        assert_eq!(r.stopped_by().as_deref(), Some("max-time"));
        assert_eq!(
            r.note().unwrap(),
            "incomplete: --max-time 18 s left no room for round 4 of the 1000 planned; of the 1000 processes planned per cell, every cell has 3 processes (procs), and no adaptive rounds ran"
        );
        assert_eq!(
            r.rounds_clause(&Adaptive::default()),
            "3 of the 1000 planned for every cell (round 4 would have ended after --max-time 18 s); no adaptive rounds"
        );
        // A complete session says whether adaptive rounds added processes.
        let mut done = ran(&[6; 4], None);
        done.planned = 6;
        assert!(done.complete() && done.note().is_none());
        // One process everywhere: the table hides procs, and the texts do not name it.
        let mut one = ran(&[1; 4], r.stop.clone());
        one.procs_column = false;
        assert!(!one.note().unwrap().contains("procs"), "{:?}", one.note());
        assert_eq!(
            one.processes_clause(),
            "1 of the 1000 planned process(es) per cell (incomplete)"
        );
        assert_eq!(done.processes_clause(), "6 process(es) per cell (procs)");
        // The time left went to the largest open comparisons.
        let then = ran(
            &[3, 3, 5, 5],
            Some(Stop::MaxTime {
                rounds: 3,
                max_time: 18.0,
                then: 2,
                then_runs: 4,
            }),
        );
        assert!(
            then.rounds_clause(&Adaptive::default()).ends_with(
                "(round 4 would have ended after --max-time 18 s); then 2 round(s) (4 runs) of the largest open comparisons, as many as fitted"
            ),
            "{}",
            then.rounds_clause(&Adaptive::default())
        );
        // Adaptive rounds gave some cells more.
        let mut more = ran(&[6, 6, 9, 12], None);
        more.planned = 6;
        assert_eq!(
            more.processes_clause(),
            "6 process(es) per cell or more (procs)"
        );
        assert_eq!(
            done.rounds_clause(&Adaptive::default()),
            "6 for every cell, then 0 adaptive round(s) (0 runs) for the cells of comparisons still undecided or wider than the precision"
        );
    }

    #[test]
    fn a_plan_over_max_runs_is_refused_with_its_size() {
        let budget = crate::model::budget::Budget {
            warmup_time_ns: 10_000_000,
            warmup_iters: 3,
            min_time_ns: 20_000_000,
            min_iters: 10,
            max_iters: 10_000_000,
            idle_ns: 0,
        };
        assert!(check_plan(24, 416, &budget, 10_000, 1).is_ok());
        let e = check_plan(24, 1000, &budget, 10_000, 1).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_BAD_INPUT);
        let m = e.to_string();
        assert!(
            m.contains("24,000 runs") && m.contains("--max-runs 10,000"),
            "{m}"
        );
        // 24,000 runs of at least 30 ms: 12 min alone, 6 min two at a time.
        assert!(m.contains("at least 12m00s"), "{m}");
        let two = check_plan(24, 1000, &budget, 10_000, 2)
            .unwrap_err()
            .to_string();
        assert!(two.contains("at least 6m00s"), "{two}");
    }
}
