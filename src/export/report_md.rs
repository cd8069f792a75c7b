//! REPORT.md and the rest of a results folder rebuilt from its runs: summary.csv, the
//! histogram files, env.json, plots. Findings are computed from the data.

use crate::analysis::cells;
use crate::analysis::jumps::Jump;
use crate::counters::unix_now;
use crate::export::csv::to_csv;
use crate::export::folder::Folder;
use crate::export::plots::{self, sizes_of_interest};
use crate::export::results::{self, Loaded, ResultsError};
use crate::export::table;
use crate::fmt::fmt_count;
use crate::fmt::rfc3339;
use crate::model::record::{Outcome, RunRecord};
use crate::model::spec::Workload;
use crate::model::summary::SummaryRow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// What a rebuild produced.
pub struct Rebuilt {
    pub planned: usize,
    pub ok: usize,
    pub failed: usize,
    pub plots: usize,
    /// Worker processes per cell.
    pub processes: u32,
    /// Worker processes with a result (record or failure), and planned.
    pub processes_done: usize,
    pub processes_planned: usize,
    /// What of the plan has no result ([`Loaded::missing`]); empty when complete.
    pub missing: Vec<String>,
    /// The headline findings REPORT.md and report.html lead with.
    pub answer: super::headlines::Answer,
}

impl Rebuilt {
    /// "24 of 24 runs ok, 0 failed", or with several processes per cell "8 of 8 cells ok
    /// (6 processes each), 0 failed".
    pub fn counts(&self) -> String {
        let counts = self.cell_counts();
        if self.complete() {
            counts
        } else {
            format!(
                "{counts}; INCOMPLETE: {} of {} planned processes ran; missing: {}",
                self.processes_done,
                self.processes_planned,
                self.missing.join("; ")
            )
        }
    }

    /// Whether the whole plan has results: every process, and every step after them.
    pub fn complete(&self) -> bool {
        self.missing.is_empty()
    }

    fn cell_counts(&self) -> String {
        match self.processes {
            0 | 1 => format!(
                "{} of {} runs ok, {} failed",
                self.ok, self.planned, self.failed
            ),
            // An unfinished run's cells need not have them all: the plan's figure.
            r if !self.complete() => format!(
                "{} of {} cells ok ({r} processes planned each), {} failed",
                self.ok, self.planned, self.failed
            ),
            r => format!(
                "{} of {} cells ok ({r} processes each), {} failed",
                self.ok, self.planned, self.failed
            ),
        }
    }
}

/// What a quick run's pages and console say first: it is a smoke test, and what the full
/// run adds.
pub const QUICK_NOTE: &str = "a quick run (--quick) is a smoke test: a reduced matrix on short budgets and one or two processes per cell, so its time ratios carry no verdict (one process gives no interval, two only a 50 % one), and only differences in exact counts (faults, syscalls) are findings here. The full run (without --quick) measures every size and thread count of the experiment, in the processes its intervals and verdicts need.";

/// What an unfinished folder's pages say first: what has no result, and that nothing
/// resting on it is stated.
pub fn incomplete_note(loaded: &Loaded) -> String {
    let (done, planned) = loaded.process_counts();
    format!(
        "this run did not finish ({done} of {planned} planned worker processes have results; {} of {} have at least one). Missing: {}. Findings that need what is missing (a change between sizes with one unmeasured between them, a knob set never run, a confirmation not measured) are not stated; `alloclab run --resume` with the same options completes it.",
        crate::fmt::counted(loaded.cells.len(), "cell", "cells"),
        loaded.plan.runs.len(),
        loaded.missing().join("; ")
    )
}

/// The environment of a folder's runs, for env.json and the report.
fn env_json(loaded: &Loaded, records: &[&RunRecord]) -> serde_json::Value {
    let mut allocators = BTreeMap::new();
    for r in records {
        allocators
            .entry(r.allocator.to_string())
            .or_insert_with(|| serde_json::json!({"version": r.env.allocator_version, "crates": r.env.allocator_crates}));
    }
    let overhead: Vec<f64> = records
        .iter()
        .map(|r| r.overhead.harness_overhead_ns_per_sample)
        .collect();
    let timer: Vec<f64> = records
        .iter()
        .map(|r| r.overhead.timer_overhead_ns)
        .collect();
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if v.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::json!({"min": lo, "max": hi})
        }
    };
    let first = records.first().map(|r| &r.env);
    serde_json::json!({
        "experiment": loaded.plan.experiment.name,
        "description": loaded.plan.experiment.description,
        "file": loaded.plan.experiment.path,
        "quick": loaded.plan.experiment.quick,
        "budget": loaded.plan.experiment.budget,
        "command_line": loaded.plan.command_line,
        "started": rfc3339(loaded.plan.started_unix),
        "report_built": rfc3339(unix_now()),
        "allocators": allocators,
        "glibc_version": first.map(|e| e.glibc_version.clone()),
        "kernel": first.map(|e| e.kernel.clone()),
        "cpu_model": first.map(|e| e.cpu_model.clone()),
        "cpus_online": first.map(|e| e.cpus_online),
        "thp_enabled": first.map(|e| e.thp_enabled.clone()),
        "thp_defrag": first.map(|e| e.thp_defrag.clone()),
        "page_size": first.map(|e| e.page_size),
        "codegen": first.map(|e| e.codegen.clone()),
        "commit": first.map(|e| e.commit.clone()),
        "observer": {
            "timer_overhead_ns": range(&timer),
            "harness_overhead_ns_per_sample": range(&overhead),
            "calibration": loaded.calibration,
        },
    })
}

/// The noise threshold of REPORT.md's verdicts (experiments with several processes).
pub const REPORT_NOISE_THRESHOLD: f64 = crate::model::metric::NOISE_THRESHOLD;

/// Writes summary.csv, env.json, plots and REPORT.md of a results folder from what it
/// holds (`loaded`: in memory after a run, read from disk by `alloclab report`); with
/// `rewrite_histograms`, the histogram files too (a run wrote them as each run finished).
pub fn rebuild(
    folder: &Folder,
    loaded: &Loaded,
    rewrite_histograms: bool,
) -> Result<Rebuilt, ResultsError> {
    // One row per cell: medians over its processes, with intervals when there are several.
    let mut rows: Vec<SummaryRow> = loaded.cells.iter().map(cells::row).collect();
    // Each variant against its in-place cell, as the answer states it.
    let cell_refs: Vec<&crate::model::record::Cell> = loaded.cells.iter().collect();
    cells::set_in_place_ratios(&cell_refs, &mut rows, REPORT_NOISE_THRESHOLD);
    let records: Vec<&RunRecord> = loaded
        .cells
        .iter()
        .flat_map(|c| c.records().map(|(_, r)| r))
        .collect();
    // Per cell, one outcome whose histogram holds every process's samples.
    let outcomes: Vec<Outcome> = loaded
        .cells
        .iter()
        .filter_map(results::merged_outcome)
        .collect();
    folder.text("summary.csv", &to_csv(&rows))?;
    // A cell of one process had its files written as it finished; merged ones are
    // written here.
    if rewrite_histograms || loaded.plan.experiment.processes > 1 {
        let processes = loaded.plan.experiment.processes;
        for cell in &loaded.cells {
            // As in its summary row: a failed process fails the cell, which has no files.
            if cell.runs.iter().any(|(_, r)| r.is_err()) {
                continue;
            }
            let id = crate::model::experiment::run_id(&cell.spec);
            let records: Vec<(String, &RunRecord)> = cell
                .records()
                .map(|(round, r)| (results::process_id(&id, round, processes), r))
                .collect();
            results::write_histograms(folder, &id, &records)?;
        }
    }
    // Every cell's memory over time, from its processes' records.
    for cell in &loaded.cells {
        let id = crate::model::experiment::run_id(&cell.spec);
        let processes = loaded.plan.experiment.processes;
        let records: Vec<(String, &RunRecord)> = cell
            .records()
            .map(|(round, r)| (results::process_id(&id, round, processes), r))
            .collect();
        results::write_memory(folder, &id, &records)?;
    }
    let env = env_json(loaded, &records);
    let env_text = serde_json::to_string_pretty(&env).unwrap_or_default();
    folder.text("env.json", &env_text)?;
    let plot_files = plots::plots(&rows, &outcomes);
    for p in &plot_files {
        folder.text(&format!("plots/{}.svg", p.name), &p.svg)?;
    }
    // Plots an earlier report of this measurement drew but this one does not (the
    // matrix changed) would mislead: remove them (only the lab's own).
    for rel in folder.listed_under("plots") {
        if !plot_files
            .iter()
            .any(|p| format!("plots/{}.svg", p.name) == rel)
        {
            folder.remove(&rel)?;
        }
    }
    let answer = super::headlines::headlines(loaded);
    let findings = super::headlines::findings(loaded, &answer);
    folder.text(
        "findings.json",
        &(serde_json::to_string_pretty(&findings).unwrap_or_default() + "\n"),
    )?;
    let blocks = findings_blocks(loaded, &rows, &outcomes, &env);
    let md = report_markdown(loaded, &rows, &env, &plot_files, &answer, &blocks);
    folder.text("REPORT.md", &md)?;
    folder.text(
        "report.html",
        &report_html(loaded, &rows, &env, &md, &answer, &blocks),
    )?;
    Ok(Rebuilt {
        planned: loaded.plan.runs.len(),
        ok: rows.iter().filter(|r| r.status.is_ok()).count(),
        failed: rows.iter().filter(|r| !r.status.is_ok()).count(),
        plots: plot_files.len(),
        processes: loaded.plan.experiment.processes,
        processes_done: loaded.process_counts().0,
        processes_planned: loaded.process_counts().1,
        missing: loaded.missing(),
        answer,
    })
}

/// A block of the findings: a lead paragraph (Markdown) or a label that heads its items
/// (and, on the page, prefixes each), and the items.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    pub lead: Option<String>,
    pub label: Option<String>,
    pub items: Vec<String>,
}

impl Block {
    fn lead(text: impl Into<String>) -> Self {
        Block {
            lead: Some(text.into()),
            ..Block::default()
        }
    }

    fn labelled(label: impl Into<String>) -> Self {
        Block {
            label: Some(label.into()),
            ..Block::default()
        }
    }
}

/// The findings of a run folder, computed once: REPORT.md's "Findings" section and
/// report.html's list are both rendered from them.
pub fn findings_blocks(
    loaded: &Loaded,
    rows: &[SummaryRow],
    outcomes: &[Outcome],
    env: &serde_json::Value,
) -> Vec<Block> {
    let mut blocks = Vec::new();
    let groups: BTreeSet<(Workload, u32)> = rows.iter().map(|r| (r.workload, r.threads)).collect();
    // Every comparison at the sizes of interest, as the one composer words it; per
    // workload, size and thread count.
    for answer in crate::export::headlines::answers(loaded) {
        let items: Vec<String> = answer.all_items().into_iter().map(|i| i.text).collect();
        if items.is_empty() {
            continue;
        }
        let mut block = Block::labelled(format!("{}:", answer.context));
        block.items = items;
        blocks.push(block);
    }
    // Where the allocator put each cell's output buffer: a dimension of its own.
    let placed: Vec<String> = crate::export::headlines::alignment(loaded)
        .into_iter()
        .map(|i| i.text)
        .collect();
    if !placed.is_empty() {
        let mut block = Block::labelled(
            "Where the allocator put the output buffer (its address past a 64-byte boundary, over each cell's processes; the lab shifts each process's heap at random, so that only what the allocator decides stays fixed):".to_string(),
        );
        block.items = placed;
        blocks.push(block);
    }
    let notes = crate::analysis::modes::behaviour_notes(rows);
    if !notes.is_empty() {
        blocks.push(Block {
            lead: None,
            label: None,
            items: notes,
        });
    }
    if let Some(note) = thp_note(rows, env) {
        blocks.push(Block::lead(note));
    }
    // Only between neighbouring sizes of the plan: a change across a size that has no
    // result was never measured.
    let (fault_jumps, syscall_jumps) = loaded.jumps(rows);
    // One finding per cliff: a jump of the sweep that a cliff was bisected from (or
    // failed to be) is that cliff's evidence, said with it, not a finding of its own.
    let covers = crate::export::headlines::covers;
    let jumps: Vec<(&Jump, &str)> = fault_jumps
        .iter()
        .map(|j| (j, "minor faults"))
        .chain(syscall_jumps.iter().map(|j| (j, "memory syscalls")))
        .collect();
    let alone: Vec<&(&Jump, &str)> = jumps
        .iter()
        .filter(|(j, what)| !loaded.cliffs.iter().any(|c| covers(j, what, c)))
        .collect();
    if jumps.is_empty() {
        if groups.iter().any(|&(w, t)| {
            rows.iter()
                .filter(|r| r.workload == w && r.threads == t)
                .map(|r| r.size)
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        }) {
            blocks.push(Block::lead(if loaded.complete() {
                "No size step changes faults or memory syscalls per element by 4x or more."
            } else {
                "No step between neighbouring sizes that both have results changes faults or memory syscalls per element by 4x or more (INCOMPLETE: steps across a size without results are not judged)."
            }));
        }
    } else if !alone.is_empty() {
        blocks.push(Block {
            lead: Some(format!(
                "**Where behaviour changes with size** (neighbouring sizes whose counts per element differ 4x or more{}):",
                if loaded.cliffs.is_empty() {
                    ""
                } else {
                    "; those bisected are with their cliffs below"
                }
            )),
            label: None,
            items: alone.iter().map(|(j, what)| crate::export::headlines::describe_change(j, what)).collect(),
        });
    }
    if !loaded.cliffs.is_empty() {
        let mut block = Block::lead("**Exact cliffs** (each change of the sweep, bisected to neighbouring sizes with `alloclab cliff`'s method; a change that could not be bisected says why):");
        for c in &loaded.cliffs {
            // The sweep's jump it was found in, as its evidence (an unresolved cliff
            // already says the sweep's values).
            let evidence = jumps
                .iter()
                .filter(|_| c.unresolved.is_none())
                .find(|(j, what)| covers(j, what, c))
                .map(|(j, _)| {
                    format!(
                        " (the sweep: {} at {} elements, {} at {})",
                        fmt_count(j.from_value),
                        fmt_count(j.from_size as f64),
                        fmt_count(j.to_value),
                        fmt_count(j.to_size as f64)
                    )
                })
                .unwrap_or_default();
            block.items.push(format!("{}{evidence}", c.describe()));
        }
        blocks.push(block);
    }
    let notes = crate::analysis::cells::unavailable_notes(outcomes);
    if !notes.is_empty() {
        blocks.push(Block {
            lead: None,
            label: None,
            items: notes.into_iter().map(|n| format!("Note: {n}")).collect(),
        });
    }
    let failed: Vec<&SummaryRow> = rows.iter().filter(|r| !r.status.is_ok()).collect();
    if !failed.is_empty() {
        let mut block = Block::labelled("Failed runs:");
        for r in failed {
            block.items.push(format!(
                "`{}`: {}",
                r.run_id,
                r.error.as_deref().unwrap_or("unknown")
            ));
        }
        blocks.push(block);
    }

    blocks
}

/// The findings as REPORT.md's Markdown: each block's lead or bold label, its bullets.
fn findings_markdown(blocks: &[Block]) -> String {
    let mut md = String::new();
    for b in blocks {
        if let Some(lead) = &b.lead {
            let _ = writeln!(md, "{lead}\n");
        }
        if let Some(label) = &b.label {
            let _ = writeln!(md, "**{label}**\n");
        }
        for i in &b.items {
            let _ = writeln!(md, "- {i}");
        }
        if !b.items.is_empty() {
            md.push('\n');
        }
    }
    md
}

/// The findings as the page lists them: each item after its block's label, in plain text
/// (no Markdown code marks; a link as its text and file).
fn findings_plain(blocks: &[Block]) -> Vec<String> {
    blocks
        .iter()
        .flat_map(|b| {
            b.items.iter().map(move |i| {
                let item = super::html::plain_links(&i.replace('`', ""));
                match &b.label {
                    Some(l) => format!("{l} {item}"),
                    None => item,
                }
            })
        })
        .collect()
}

/// REPORT.md's answer: its headlines (at most [`super::headlines::MOST`] bullets) and the
/// count of the rest, then the price of speed in a section of its own, so that the
/// answer stays five lines however many allocators are priced.
fn answer_markdown(answer: &super::headlines::Answer) -> String {
    let mut md = String::new();
    if !answer.items.is_empty() {
        let _ = writeln!(md, "## Answer\n");
        for a in &answer.items {
            let _ = writeln!(md, "- {}", a.text);
        }
        if let Some(more) = answer.more_line() {
            let _ = writeln!(md, "\n{more}");
        }
    }
    if !answer.price.is_empty() {
        if !md.is_empty() {
            md.push('\n');
        }
        let _ = writeln!(
            md,
            "## {}\n",
            super::headlines::beside_heading(&answer.price)
        );
        for p in &answer.price {
            let _ = writeln!(md, "- {}", p.text);
        }
    }
    md
}

fn report_markdown(
    loaded: &Loaded,
    rows: &[SummaryRow],
    env: &serde_json::Value,
    plots: &[plots::PlotFile],
    answer: &super::headlines::Answer,
    blocks: &[Block],
) -> String {
    let e = &loaded.plan.experiment;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n\n{}\n", e.name, e.description);
    if !loaded.complete() {
        let _ = writeln!(md, "> **INCOMPLETE:** {}\n", incomplete_note(loaded));
    }
    if e.quick {
        let _ = writeln!(md, "> **Quick:** {QUICK_NOTE}\n");
    }
    // The answer first: the headline findings (the same the page and the console lead
    // with), every finding after them.
    md.push_str(&answer_markdown(answer));
    let mut envmd = String::new();
    let _ = writeln!(envmd, "## Environment\n");
    let _ = writeln!(envmd, "| | |\n|:--|:--|");
    let j = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "unknown".into(),
        other => other.to_string(),
    };
    if let Some(allocs) = env["allocators"].as_object() {
        for (name, a) in allocs {
            // glibc comes with the system, not from a crate: no empty "()".
            let crates = j(&a["crates"]);
            let _ = writeln!(
                envmd,
                "| {name} | {}{} |",
                j(&a["version"]),
                if crates.is_empty() {
                    String::new()
                } else {
                    format!(" ({crates})")
                }
            );
        }
    }
    for (label, key) in [
        ("glibc", "glibc_version"),
        ("kernel", "kernel"),
        ("CPU", "cpu_model"),
        ("CPUs online", "cpus_online"),
        ("THP enabled / defrag", "thp_enabled"),
        ("page size", "page_size"),
        ("commit", "commit"),
        ("started", "started"),
    ] {
        let value = if key == "thp_enabled" {
            format!("{} / {}", j(&env["thp_enabled"]), j(&env["thp_defrag"]))
        } else {
            j(&env[key])
        };
        let _ = writeln!(envmd, "| {label} | {value} |");
    }
    let cg = &env["codegen"];
    let _ = writeln!(
        envmd,
        "| codegen | {} {} target-cpu={} |",
        j(&cg["profile"]),
        j(&cg["target"]),
        j(&cg["target_cpu"])
    );
    let b = &e.budget;
    let _ = writeln!(
        envmd,
        "| budget | warm-up ≥ {} s and {} iterations; measure ≥ {} s and {} iterations, at most {}{} |",
        b.warmup_time_ns as f64 / 1e9,
        b.warmup_iters,
        b.min_time_ns as f64 / 1e9,
        b.min_iters,
        b.max_iters,
        if e.quick { " (quick mode)" } else { "" }
    );
    let _ = writeln!(
        envmd,
        "| command | `{}` |",
        loaded.plan.command_line.join(" ")
    );
    let obs = &env["observer"]["harness_overhead_ns_per_sample"];
    if !obs.is_null() {
        // "20 ns" where every run agrees, "55–104 ns" where they differ.
        let range = |v: &serde_json::Value| {
            let (lo, hi) = (v["min"].as_f64(), v["max"].as_f64());
            match (lo, hi) {
                (Some(lo), Some(hi)) if format!("{lo:.0}") == format!("{hi:.0}") => {
                    format!("{lo:.0} ns")
                }
                (Some(lo), Some(hi)) => format!("{lo:.0}–{hi:.0} ns"),
                _ => "n/a".to_string(),
            }
        };
        let _ = writeln!(
            envmd,
            "| observer | {} per sample (two clock reads and a histogram record), clock pair {} |",
            range(obs),
            range(&env["observer"]["timer_overhead_ns"]),
        );
    }

    // How the figures were made and what the observer costs, after the findings.
    let mut method = String::from("## Method\n\n");
    let mut observer = String::new();
    if let Some(c) = &loaded.calibration {
        let _ = writeln!(observer, "\n### Observer\n");
        let each = c
            .min_time_s
            .map(|s| format!(" of {s} s a process"))
            .unwrap_or_default();
        let _ = writeln!(observer, "Measured before the runs (`alloclab calibrate`, {} round(s){each}); the goal is an observer that moves the median by under 2 %.\n", c.rounds);
        for line in c.describe() {
            let _ = writeln!(observer, "- {line}");
        }
    } else {
        let _ = writeln!(observer, "\n### Observer\n");
        let _ = writeln!(observer, "The observer's effect on the median (its calibration) was not measured for this run (`alloclab run --no-calibration`, or the calibration failed); the harness cost per sample in the environment table is each worker's own measurement. `alloclab calibrate` measures the rest.");
    }

    let processes = loaded.plan.experiment.processes;
    // Each record keeps its process's layout draw; none where the layout was fixed.
    let (drawn, all) = loaded
        .cells
        .iter()
        .flat_map(|c| c.records())
        .fold((0, 0), |(d, n), (_, r)| {
            (d + usize::from(r.layout.is_some()), n + 1)
        });
    if all > 0 {
        let mode = if drawn == all {
            crate::model::layout::LayoutMode::Random
        } else {
            crate::model::layout::LayoutMode::Fixed
        };
        let _ = writeln!(
            method,
            "Layout: {}{}.\n",
            mode.words(),
            if drawn > 0 && drawn < all {
                format!(" in {} of {all} processes", all - drawn)
            } else {
                String::new()
            }
        );
    }
    if processes > 1 {
        let lvl = crate::analysis::stats::level_text(loaded.plan.level());
        let _ = writeln!(
            method,
            "Computed from the runs below: each cell in {processes} worker processes over interleaved rounds (the order within round r shuffled from the experiment's seed + r); latency is the median over processes of each process's p50, and each ratio is the median of the per-round ratios with its {lvl} interval, called faster or slower only when the whole interval (of at least {lvl}) lies beyond ±{} %{}.\n",
            REPORT_NOISE_THRESHOLD * 100.0,
            crate::analysis::stats::too_few(processes as usize, "processes", loaded.plan.level())
                .map_or(String::new(), |few| format!(" — {few}"))
        );
    } else {
        let _ = writeln!(
            method,
            "Computed from the runs below; latency is the p50 of each run (one process per cell: no intervals; `processes = 6` in the experiment's `[budget]` gives them).\n"
        );
    }
    let _ = writeln!(md, "\n## Findings\n");
    md.push_str(findings_markdown(blocks).trim_end());
    md.push('\n');
    let groups: BTreeSet<(Workload, u32)> = rows.iter().map(|r| (r.workload, r.threads)).collect();
    md.push('\n');
    md.push_str(&method);
    md.push_str(&observer);
    md.push('\n');
    md.push_str(&envmd);

    // Plots.
    if !plots.is_empty() {
        let _ = writeln!(md, "\n## Plots\n");
        for p in plots {
            let _ = writeln!(
                md,
                "### {}\n\n![{}](plots/{}.svg)\n",
                p.title, p.title, p.name
            );
        }
    }

    // Summary table at the sizes of interest; everything is in summary.csv.
    let _ = writeln!(md, "## Summary\n");
    let mut shown: Vec<SummaryRow> = Vec::new();
    let mut all_shown = true;
    for &(w, t) in &groups {
        let group: Vec<&SummaryRow> = rows
            .iter()
            .filter(|r| r.workload == w && r.threads == t)
            .collect();
        let sizes: BTreeSet<u64> = group.iter().map(|r| r.size).collect();
        let keep = sizes_of_interest(&sizes);
        all_shown &= keep.len() == sizes.len();
        shown.extend(
            group
                .into_iter()
                .filter(|r| keep.contains(&r.size))
                .cloned(),
        );
    }
    if !all_shown {
        let _ = writeln!(md, "At the sizes of interest; every run is in [summary.csv](summary.csv), with per-run records in `runs/` and latency distributions in `histograms/`.\n");
    } else {
        let _ = writeln!(md, "Every run; also in [summary.csv](summary.csv), with per-run records in `runs/` and latency distributions in `histograms/`.\n");
    }
    md.push_str(&table::to_markdown(&shown));
    md
}

/// Where faults mapped huge pages, fault counts are not comparable page for page: the
/// note names the cells that took them and the column that compares (the bytes faulted
/// in). Where the kernel's huge-page count was not read, mimalloc (which asks for huge
/// pages) is named as the likely one.
fn thp_note(rows: &[SummaryRow], env: &serde_json::Value) -> Option<String> {
    use crate::model::metric::HUGE_FAULTS;
    let thp = env["thp_enabled"].as_str()?;
    let mut huge: Vec<String> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| r.per_iter[HUGE_FAULTS].is_some_and(|h| h >= 0.005))
    {
        let name = format!("{} {}", r.allocator_spec, r.variant);
        if !huge.contains(&name) {
            huge.push(name);
        }
    }
    if !huge.is_empty() {
        let shown = if huge.len() > 4 {
            format!("{} and {} more", huge[..4].join(", "), huge.len() - 4)
        } else {
            huge.join(", ")
        };
        return Some(format!(
            "Note: some faults mapped a transparent huge page (2 MiB where the others map 4 KiB; THP here: {thp}): {shown}. Fault counts are then not comparable page for page; `faulted_bytes_per_iter` in summary.csv is the memory faulted in whatever the page size."
        ));
    }
    let mimalloc_unread = rows.iter().any(|r| {
        r.allocator == crate::model::spec::Allocator::Mimalloc
            && r.per_iter[HUGE_FAULTS].is_none()
            && !r.allocator_spec.contains("thp=never")
            && !r.allocator_spec.contains("allow_thp=false")
    });
    (mimalloc_unread && thp != "never").then(|| {
        format!(
            "Note: mimalloc asks for transparent huge pages (THP here: {thp}), so one of its faults can map 2 MiB where the others fault 4 KiB pages, and the kernel's count of huge-page faults was not read: its fault counts may not be comparable page for page. `thp = [\"never\"]` in the experiment, or `mimalloc:allow_thp=0`, makes them comparable."
        )
    })
}

/// The cells whose memory over time report.html draws: every cell, but of a sweep only
/// those of its largest size (one chart per size would bury the rest).
fn memory_cells(loaded: &Loaded, rows: &[SummaryRow]) -> Vec<crate::model::record::Cell> {
    let largest = loaded.cells.iter().map(|c| c.spec.size).max();
    loaded
        .cells
        .iter()
        .filter(|c| !super::html::is_sweep(rows) || Some(c.spec.size) == largest)
        .cloned()
        .collect()
}

/// The run folder's report.html: the findings of REPORT.md, charts of its cells (against
/// size, with the cliffs marked, for a sweep), and REPORT.md itself.
fn report_html(
    loaded: &Loaded,
    rows: &[SummaryRow],
    env: &serde_json::Value,
    md: &str,
    answer: &super::headlines::Answer,
    blocks: &[Block],
) -> String {
    use super::html;
    let e = &loaded.plan.experiment;
    let figures = if html::is_sweep(rows) {
        let cliffs: Vec<(f64, String)> = loaded
            .cliffs
            .iter()
            .filter(|c| c.unresolved.is_none())
            .map(|c| {
                (
                    c.above_size as f64,
                    format!("{} {} {}", c.allocator, c.variant, c.metric),
                )
            })
            .collect();
        html::sweep_figures(rows, &cliffs)
    } else {
        html::grouped_cell_figures(rows)
    };
    // Beside the charts, every allocator × variant of a comparison at one size as a heat
    // table (ratio to the allocator's in-place cell, a colour and a word per verdict).
    // One per workload, thread count and size with several allocators or variants; none
    // for a sweep (its charts are against size).
    let sections = if html::is_sweep(rows) {
        Vec::new()
    } else {
        let mut out = Vec::new();
        for answer in crate::export::headlines::answers(loaded) {
            let Some(f) = answer.findings().chain(&answer.open).next() else {
                continue;
            };
            let key = (f.figures.workload, f.figures.threads, f.figures.size);
            let at = rows
                .iter()
                .filter(|r| (r.workload, r.threads, r.size) == key);
            let allocators: BTreeSet<&String> = at.clone().map(|r| &r.allocator_spec).collect();
            let variants: BTreeSet<_> = at.map(|r| r.variant).collect();
            if allocators.len() > 1 || variants.len() > 2 {
                let id = format!("matrix-{}", out.len() + 1);
                out.extend(super::index::heat_table(
                    &answer,
                    loaded.plan.experiment.processes,
                    &id,
                ));
            }
        }
        out
    };
    // A page of an unfinished run says so before its answer.
    let (done, planned) = loaded.process_counts();
    let title = if loaded.complete() {
        format!("alloclab run: {}", e.name)
    } else {
        format!(
            "INCOMPLETE ({done} of {planned} processes{}): alloclab run: {}",
            if loaded.unfinished.is_empty() {
                ""
            } else {
                ", steps unfinished"
            },
            e.name
        )
    };
    let mut environment = vec![e.description.clone()];
    environment.extend(html::environment_lines(env));
    html::Page {
        title,
        environment,
        answer: answer.clone(),
        sections,
        findings: findings_plain(blocks),
        figures: figures
            .into_iter()
            .chain(html::cell_memory_figures(&memory_cells(loaded, rows)))
            .collect(),
        drawings: Vec::new(),
        text: Vec::new(),
        markdown: vec![("REPORT.md".into(), md.to_string())],
    }
    .render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::findings::Item;

    /// Five headlines and six allocators priced against glibc: the answer is five
    /// bullets and the count of the rest; the price of speed follows under its own
    /// heading, not as more bullets of the answer.
    #[test]
    fn the_answer_is_at_most_five_bullets_and_the_price_follows_apart() {
        let named = |prefix: &str, n: usize| -> Vec<Item> {
            (0..n).map(|i| Item::text(format!("{prefix}{i}"))).collect()
        };
        let answer = super::super::headlines::Answer {
            items: named("headline ", 5),
            more: 3,
            incomplete: None,
            price: named("price ", 6),
        };
        let md = answer_markdown(&answer);
        let section = md
            .split("## Answer\n\n")
            .nth(1)
            .and_then(|a| a.split("## ").next())
            .unwrap();
        let bullets = section.lines().filter(|l| l.starts_with("- ")).count();
        assert_eq!(bullets, 5, "{md}");
        assert!(!section.contains("price"), "{md}");
        assert!(section.contains("… and 3 more"), "{md}");
        let price = md.split("## The price of speed\n\n").nth(1).unwrap();
        assert_eq!(
            price.lines().filter(|l| l.starts_with("- price ")).count(),
            6
        );
        // Only the price: no empty answer heading.
        let only = answer_markdown(&super::super::headlines::Answer {
            price: named("price ", 1),
            ..Default::default()
        });
        assert!(
            only.starts_with("## The price of speed\n\n- price 0\n"),
            "{only}"
        );
    }
}
