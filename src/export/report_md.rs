//! REPORT.md and the rest of a results folder rebuilt from its runs: summary.csv, the
//! histogram files, env.json, plots. Findings are computed from the data.

use crate::driver::human_bytes;
use crate::export::plots::{self, sizes_of_interest};
use crate::export::results::{self, rfc3339, unix_now, write_atomic, Loaded, ResultsError};
use crate::record::RunRecord;
use crate::report::{self, fmt_count, SummaryRow};
use crate::spec::{Variant, Workload};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// What a rebuild produced.
pub struct Rebuilt {
    pub planned: usize,
    pub ok: usize,
    pub failed: usize,
    pub plots: usize,
}

/// A change in a per-iteration counter between two neighbouring sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Jump {
    pub workload: Workload,
    pub threads: u32,
    /// The allocator with its knobs.
    pub allocator: String,
    pub variant: Variant,
    pub from_size: u64,
    pub from_value: f64,
    pub to_size: u64,
    pub to_value: f64,
}

/// One line of a size sweep: workload, threads, allocator, variant.
type LineKey = (Workload, u32, String, Variant);

/// Neighbouring sizes where `get` jumps up or drops: by at least `min_delta` per
/// iteration, and by a factor of 4 or more per element (faults that merely grow with
/// the size are not a change of behaviour).
pub fn jumps(
    rows: &[SummaryRow],
    get: fn(&SummaryRow) -> Option<f64>,
    min_delta: f64,
) -> Vec<Jump> {
    let mut series: BTreeMap<LineKey, Vec<(u64, f64)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == "ok") {
        if let Some(v) = get(r) {
            series
                .entry((r.workload, r.threads, r.allocator_spec.clone(), r.variant))
                .or_default()
                .push((r.size, v));
        }
    }
    let mut out = Vec::new();
    for ((workload, threads, allocator, variant), mut pts) in series {
        pts.sort_by_key(|p| p.0);
        for w in pts.windows(2) {
            let ((s1, v1), (s2, v2)) = (w[0], w[1]);
            let (r1, r2) = (v1 / s1 as f64, v2 / s2 as f64);
            let (lo, hi) = (r1.min(r2), r1.max(r2));
            if (v2 - v1).abs() >= min_delta && hi >= 4.0 * lo {
                out.push(Jump {
                    workload,
                    threads,
                    allocator: allocator.clone(),
                    variant,
                    from_size: s1,
                    from_value: v1,
                    to_size: s2,
                    to_value: v2,
                });
            }
        }
    }
    out
}

fn describe_jump(j: &Jump, what: &str) -> String {
    let verb = if j.to_value > j.from_value {
        "jump"
    } else {
        "drop"
    };
    format!(
        "{} {} ({}, {} thread(s)): {what} per iteration {verb} from {} at {} elements ({} per f64 buffer) to {} at {} elements ({})",
        j.allocator,
        j.variant,
        j.workload,
        j.threads,
        fmt_count(j.from_value),
        fmt_count(j.from_size as f64),
        human_bytes(j.from_size * 8),
        fmt_count(j.to_value),
        fmt_count(j.to_size as f64),
        human_bytes(j.to_size * 8),
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

/// Rebuilds summary.csv, histograms, env.json, plots and REPORT.md of a results folder
/// from its plan and `runs/`.
pub fn rebuild(root: &Path) -> Result<Rebuilt, ResultsError> {
    let loaded = results::load(root)?;
    let rows: Vec<SummaryRow> = loaded
        .outcomes
        .iter()
        .map(SummaryRow::from_outcome)
        .collect();
    let records: Vec<&RunRecord> = loaded
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().ok())
        .collect();
    write_atomic(&root.join("summary.csv"), report::to_csv(&rows).as_bytes())?;
    for o in &loaded.outcomes {
        if let Ok(r) = &o.result {
            results::write_histograms(root, &crate::experiment::run_id(&o.spec), r)?;
        }
    }
    let env = env_json(&loaded, &records);
    let env_text = serde_json::to_string_pretty(&env).unwrap_or_default();
    write_atomic(&root.join("env.json"), env_text.as_bytes())?;
    let plot_files = plots::plots(&rows, &loaded.outcomes);
    for p in &plot_files {
        write_atomic(
            &root.join("plots").join(format!("{}.svg", p.name)),
            p.svg.as_bytes(),
        )?;
    }
    // Plots an earlier report drew but this one does not (the matrix changed) would
    // mislead: remove them.
    if let Ok(entries) = std::fs::read_dir(root.join("plots")) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let current = plot_files.iter().any(|p| format!("{}.svg", p.name) == name);
            if name.ends_with(".svg") && !current {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let md = report_markdown(&loaded, &rows, &env, &plot_files);
    write_atomic(&root.join("REPORT.md"), md.as_bytes())?;
    Ok(Rebuilt {
        planned: loaded.plan.runs.len(),
        ok: records.len(),
        failed: rows.len() - records.len(),
        plots: plot_files.len(),
    })
}

fn report_markdown(
    loaded: &Loaded,
    rows: &[SummaryRow],
    env: &serde_json::Value,
    plots: &[plots::PlotFile],
) -> String {
    let e = &loaded.plan.experiment;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n\n{}\n", e.name, e.description);
    let done = rows.len();
    let planned = loaded.plan.runs.len();
    if done < planned {
        let _ = writeln!(
            md,
            "> **Incomplete:** {done} of {planned} planned runs have results (the run was interrupted or is still going; `alloclab run --resume` completes it).\n"
        );
    }
    let _ = writeln!(md, "## Environment\n");
    let _ = writeln!(md, "| | |\n|:--|:--|");
    let j = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "unknown".into(),
        other => other.to_string(),
    };
    if let Some(allocs) = env["allocators"].as_object() {
        for (name, a) in allocs {
            let _ = writeln!(
                md,
                "| {name} | {} ({}) |",
                j(&a["version"]),
                j(&a["crates"])
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
        let _ = writeln!(md, "| {label} | {value} |");
    }
    let cg = &env["codegen"];
    let _ = writeln!(
        md,
        "| codegen | {} {} target-cpu={} |",
        j(&cg["profile"]),
        j(&cg["target"]),
        j(&cg["target_cpu"])
    );
    let b = &e.budget;
    let _ = writeln!(
        md,
        "| budget | warm-up ≥ {} s and {} iterations; measure ≥ {} s and {} iterations, at most {}{} |",
        b.warmup_time_ns as f64 / 1e9,
        b.warmup_iters,
        b.min_time_ns as f64 / 1e9,
        b.min_iters,
        b.max_iters,
        if e.quick { " (quick mode)" } else { "" }
    );
    let _ = writeln!(md, "| command | `{}` |", loaded.plan.command_line.join(" "));
    let obs = &env["observer"]["harness_overhead_ns_per_sample"];
    if !obs.is_null() {
        let _ = writeln!(
            md,
            "| observer | {:.0}–{:.0} ns per sample (two clock reads and a histogram record), clock pair {:.0}–{:.0} ns |",
            obs["min"].as_f64().unwrap_or(0.0),
            obs["max"].as_f64().unwrap_or(0.0),
            env["observer"]["timer_overhead_ns"]["min"].as_f64().unwrap_or(0.0),
            env["observer"]["timer_overhead_ns"]["max"].as_f64().unwrap_or(0.0),
        );
    }

    if let Some(c) = &loaded.calibration {
        let _ = writeln!(md, "\n## Observer\n");
        let _ = writeln!(md, "Measured before the runs (`alloclab calibrate`, {} round(s)); the goal is an observer that moves the median by under 2 %.\n", c.rounds);
        for line in c.describe() {
            let _ = writeln!(md, "- {line}");
        }
    }

    // Findings.
    let _ = writeln!(md, "\n## Findings\n");
    let _ = writeln!(
        md,
        "Computed from the runs below; latency is the p50 of each run.\n"
    );
    let groups: BTreeSet<(Workload, u32)> = rows.iter().map(|r| (r.workload, r.threads)).collect();
    for &(w, t) in &groups {
        let sizes: BTreeSet<u64> = rows
            .iter()
            .filter(|r| r.workload == w && r.threads == t)
            .map(|r| r.size)
            .collect();
        for n in sizes_of_interest(&sizes) {
            let at: Vec<SummaryRow> = rows
                .iter()
                .filter(|r| r.workload == w && r.threads == t && r.size == n)
                .cloned()
                .collect();
            let lines = report::explanations(&at);
            if lines.is_empty() {
                continue;
            }
            let _ = writeln!(
                md,
                "**{w}, {} elements, {t} thread(s):**\n",
                fmt_count(n as f64)
            );
            for l in lines {
                let _ = writeln!(
                    md,
                    "- {}",
                    l.split_whitespace().collect::<Vec<_>>().join(" ")
                );
            }
            md.push('\n');
        }
    }
    let fault_jumps = jumps(rows, |r| r.minflt_per_iter, 10.0);
    let syscall_jumps = jumps(rows, |r| r.memory_syscalls_per_iter, 0.5);
    if fault_jumps.is_empty() && syscall_jumps.is_empty() {
        if groups.iter().any(|&(w, t)| {
            rows.iter()
                .filter(|r| r.workload == w && r.threads == t)
                .map(|r| r.size)
                .collect::<BTreeSet<_>>()
                .len()
                > 1
        }) {
            let _ = writeln!(
                md,
                "No size step changes faults or memory syscalls per element by 4x or more.\n"
            );
        }
    } else {
        let _ = writeln!(
            md,
            "**Where behaviour changes with size** (neighbouring sizes whose counts per element differ 4x or more):\n"
        );
        for j in &fault_jumps {
            let _ = writeln!(md, "- {}", describe_jump(j, "minor faults"));
        }
        for j in &syscall_jumps {
            let _ = writeln!(md, "- {}", describe_jump(j, "memory syscalls"));
        }
        md.push('\n');
    }
    if !loaded.cliffs.is_empty() {
        let _ = writeln!(
            md,
            "**Exact cliffs** (each change above, bisected to neighbouring sizes with `alloclab cliff`'s method):\n"
        );
        for c in &loaded.cliffs {
            let _ = writeln!(md, "- {}", c.describe());
        }
        md.push('\n');
    }
    let notes = report::unavailable_notes(&loaded.outcomes);
    for n in notes {
        let _ = writeln!(md, "- Note: {n}");
    }
    let failed: Vec<&SummaryRow> = rows.iter().filter(|r| r.status != "ok").collect();
    if !failed.is_empty() {
        let _ = writeln!(md, "\n**Failed runs:**\n");
        for r in failed {
            let _ = writeln!(
                md,
                "- `{}`: {}",
                r.run_id,
                r.error.as_deref().unwrap_or("unknown")
            );
        }
    }

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
    md.push_str(&report::to_markdown(&shown));
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{Outcome, RunFailure};
    use crate::spec::{Allocator, RunSpec};

    fn row(size: u64, minflt: f64) -> SummaryRow {
        let mut r = SummaryRow::from_outcome(&Outcome {
            spec: RunSpec {
                allocator: Allocator::System,
                workload: Workload::Scale,
                variant: Variant::OutOfPlace,
                size,
                threads: 1,
                seed: 1,
                knobs: Vec::new(),
                thp: Default::default(),
            },
            result: Err(RunFailure {
                cause: String::new(),
            }),
        });
        r.status = "ok";
        r.minflt_per_iter = Some(minflt);
        r
    }

    #[test]
    fn jumps_find_steps_but_not_proportional_growth() {
        let rows = vec![
            row(1000, 0.0),
            row(2000, 0.0),
            row(4000, 0.02),
            row(8000, 35.0),
            row(16000, 70.0),
            row(32000, 140.0),
        ];
        let j = jumps(&rows, |r| r.minflt_per_iter, 10.0);
        assert_eq!(j.len(), 1, "{j:?}");
        assert_eq!((j[0].from_size, j[0].to_size), (4000, 8000));
        let text = describe_jump(&j[0], "minor faults");
        assert!(text.contains("jump from 0.02 at 4,000 elements"), "{text}");
        let drops = jumps(&[row(1, 500.0), row(2, 3.0)], |r| r.minflt_per_iter, 10.0);
        assert!(describe_jump(&drops[0], "minor faults").contains("drop"));
    }
}
