//! `alloclab diff BASE NEW`: two results (folders of `alloclab run`, or compare's JSON or
//! CSV output) matched cell by cell — what changed, by how much, whether significantly,
//! and which differences in the environment could explain it. Exit 1 when some cell got
//! significantly slower, so that a CI job can guard an allocator upgrade.

use crate::analysis::diff::{diff, CellChange, Diff, DiffInput};
use crate::analysis::explain::describe;
use crate::analysis::stats::{Comparison, Interval};
use crate::cli::DiffArgs;
use crate::error::{Error, Result};
use crate::export::table::{render_markdown, render_table, TableRow};
use crate::export::Format;
use crate::fmt::{fmt_ns, human_bytes, signed};
use std::collections::BTreeMap;
use std::path::Path;

/// One side: its rows and, for a results folder, its environment (flattened).
struct Side {
    rows: Vec<DiffInput>,
    env: Option<BTreeMap<String, String>>,
}

fn load(path: &Path) -> Result<Side> {
    let bad = |why: String| Error::BadInput(format!("{}: {why}", path.display()));
    if path.is_dir() {
        if path.join("exec.json").exists() {
            return load_exec(path);
        }
        let summary = path.join("summary.csv");
        let text = std::fs::read_to_string(&summary).map_err(|e| {
            bad(format!(
                "cannot read summary.csv ({e}): give a results folder of `alloclab run` (results/<experiment>) or a file from `alloclab compare --format json` or `--format csv`"
            ))
        })?;
        let env = std::fs::read_to_string(path.join("env.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map(|v| {
                let mut flat = BTreeMap::new();
                flatten("", &v, &mut flat);
                flat
            });
        return Ok(Side {
            rows: from_csv(&text).map_err(bad)?,
            env,
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let rows = if text.trim_start().starts_with('[') {
        // compare's rows, or exec's (`alloclab exec --format json`).
        match serde_json::from_str::<Vec<crate::export::exec::ExecRow>>(&text) {
            Ok(exec) if !exec.is_empty() => exec.iter().map(DiffInput::from_exec).collect(),
            _ => serde_json::from_str(&text).map_err(|e| {
                bad(format!(
                    "not the JSON of `alloclab compare --format json` or `alloclab exec --format json`: {e}"
                ))
            })?,
        }
    } else {
        from_csv(&text).map_err(bad)?
    };
    Ok(Side { rows, env: None })
}

/// A folder of `alloclab exec --out`: one row per allocator from its runs; the
/// environment and the command as the environment to compare.
fn load_exec(path: &Path) -> Result<Side> {
    let bad = |why: String| Error::BadInput(format!("{}: {why}", path.display()));
    let text = std::fs::read_to_string(path.join("exec.json"))
        .map_err(|e| bad(format!("cannot read exec.json: {e}")))?;
    let record: crate::engine::command::ExecRecord = serde_json::from_str(&text)
        .map_err(|e| bad(format!("exec.json is not an `alloclab exec` record: {e}")))?;
    let rows: Vec<DiffInput> = crate::export::exec::rows(&record)
        .iter()
        .map(DiffInput::from_exec)
        .collect();
    let mut env = BTreeMap::new();
    if let Ok(v) = serde_json::to_value(&record.environment) {
        flatten("", &v, &mut env);
    }
    env.insert("command".into(), record.command.join(" "));
    Ok(Side {
        rows,
        env: Some(env),
    })
}

fn from_csv(text: &str) -> std::result::Result<Vec<DiffInput>, String> {
    csv::Reader::from_reader(text.as_bytes())
        .deserialize()
        .collect::<std::result::Result<Vec<DiffInput>, _>>()
        .map_err(|e| format!("not a summary CSV of the lab: {e}"))
}

/// `{"codegen": {"profile": "release"}}` → `codegen.profile = release`.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// Environment entries that differ (the command line always does; it is left out).
fn env_changes(base: &Side, new: &Side) -> Vec<String> {
    let (Some(b), Some(n)) = (&base.env, &new.env) else {
        return Vec::new();
    };
    let keys: std::collections::BTreeSet<&String> = b.keys().chain(n.keys()).collect();
    keys.into_iter()
        .filter(|k| !k.starts_with("command_line"))
        .filter(|k| b.get(*k) != n.get(*k))
        .map(|k| {
            format!(
                "{k}: {} → {}",
                b.get(k).map_or("(none)", String::as_str),
                n.get(k).map_or("(none)", String::as_str)
            )
        })
        .collect()
}

fn change_words(c: &CellChange) -> String {
    let Some(ratio) = c.ratio else {
        return c.note.clone().unwrap_or_else(|| "n/a".into());
    };
    let interval = match (c.ratio_ci_low, c.ratio_ci_high, c.ratio_ci_coverage) {
        (Some(low), Some(high), Some(coverage)) => Some(Interval {
            low,
            high,
            coverage,
        }),
        _ => None,
    };
    describe(&Comparison {
        ratio,
        interval,
        pairs: 0,
        verdict: c.verdict,
    })
}

fn table_rows(d: &Diff) -> Vec<TableRow> {
    let ns = |v: Option<f64>| v.map_or("n/a".into(), fmt_ns);
    let delta = |v: Option<f64>| v.map_or("n/a".into(), signed);
    d.cells
        .iter()
        .map(|c| TableRow {
            cells: vec![
                c.cell.clone(),
                ns(c.base_p50_ns),
                ns(c.new_p50_ns),
                change_words(c),
                delta(c.minflt_per_iter_change),
                delta(c.memory_syscalls_per_iter_change),
                c.rss_end_bytes_change.map_or("n/a".into(), |v| {
                    let sign = if v < 0.0 { "-" } else { "+" };
                    format!("{sign}{}", human_bytes(v.abs() as u64))
                }),
            ],
            failure: None,
        })
        .collect()
}

const HEADERS: [&str; 7] = [
    "cell",
    "base p50",
    "new p50",
    "new vs base (interval)",
    "Δ minflt/it",
    "Δ mem syscalls/it",
    "Δ rss_end",
];

pub fn run(args: &DiffArgs) -> Result<()> {
    let base = load(&args.base)?;
    let new = load(&args.new)?;
    let (mut base, mut new) = (base, new);
    // --pair: the two specs' cells are one cell, named after both.
    for (b, n) in &args.pairs {
        let label = format!("{b} → {n}");
        let mut found = (false, false);
        for r in base.rows.iter_mut().filter(|r| &r.allocator_spec == b) {
            r.allocator_spec = label.clone();
            found.0 = true;
        }
        for r in new.rows.iter_mut().filter(|r| &r.allocator_spec == n) {
            r.allocator_spec = label.clone();
            found.1 = true;
        }
        for (ok, spec, path) in [(found.0, b, &args.base), (found.1, n, &args.new)] {
            if !ok {
                return Err(Error::BadInput(format!(
                    "--pair {b}={n}: {} has no cell of {spec}",
                    path.display()
                )));
            }
        }
    }
    for (side, path) in [(&base, &args.base), (&new, &args.new)] {
        if let Some(why) = crate::analysis::diff::invalid(&side.rows) {
            return Err(Error::BadInput(format!("{}: {why}", path.display())));
        }
    }
    let d = diff(&base.rows, &new.rows, args.noise_threshold);
    if d.cells.is_empty() {
        let specs = |s: &Side| {
            let mut v: Vec<&str> = s.rows.iter().map(|r| r.allocator_spec.as_str()).collect();
            v.sort_unstable();
            v.dedup();
            v.join(", ")
        };
        return Err(Error::BadInput(format!(
            "no cell is in both {} ({}) and {} ({}): they measured different workloads, sizes or allocators; to compare differently named allocators, give --pair BASE_SPEC=NEW_SPEC",
            args.base.display(),
            specs(&base),
            args.new.display(),
            specs(&new)
        )));
    }
    let env = env_changes(&base, &new);
    let mut notes: Vec<String> = Vec::new();
    // A different command changes every ratio: said first.
    notes.extend(
        d.command_change
            .iter()
            .map(|c| format!("COMMAND CHANGED: {c}")),
    );
    notes.extend(
        env.iter()
            .filter(|e| !(d.command_change.is_some() && e.starts_with("command:")))
            .map(|e| format!("environment: {e}")),
    );
    notes.extend(
        d.version_changes
            .iter()
            .map(|v| format!("allocator version: {v}")),
    );
    let mut tail: Vec<String> = Vec::new();
    tail.extend(d.only_in_base.iter().map(|k| format!("only in BASE: {k}")));
    tail.extend(d.only_in_new.iter().map(|k| format!("only in NEW: {k}")));
    let count = |v: crate::analysis::stats::Verdict| {
        d.cells.iter().filter(|c| c.verdict == Some(v)).count()
    };
    let by = |m: &str| d.cells.iter().filter(|c| c.ratio_method == Some(m)).count();
    let (hl, medians) = (by("hodges-lehmann"), by("medians-bonferroni"));
    let mut methods = Vec::new();
    if hl > 0 {
        methods.push(format!(
            "{hl} from each side's processes (Hodges–Lehmann, Mann–Whitney interval)"
        ));
    }
    if medians > 0 {
        methods.push(format!(
            "{medians} from the two medians' intervals (Bonferroni)"
        ));
    }
    let summary = format!(
        "{} cells compared: {} slower, {} faster, {} undecided (interval below {}), the rest within ±{} % or without an interval; intervals: {}",
        d.cells.len(),
        count(crate::analysis::stats::Verdict::Slower),
        count(crate::analysis::stats::Verdict::Faster),
        count(crate::analysis::stats::Verdict::Undecided),
        crate::analysis::stats::level_text(),
        args.noise_threshold * 100.0,
        if methods.is_empty() { "none".to_string() } else { methods.join(", ") }
    );
    let text = match args.format {
        Format::Json => {
            let value = serde_json::json!({
                "base": args.base.display().to_string(),
                "new": args.new.display().to_string(),
                "noise_threshold": args.noise_threshold,
                "environment_changes": env,
                "diff": d,
            });
            serde_json::to_string_pretty(&value).map_err(Error::failed)? + "\n"
        }
        Format::Markdown => {
            let mut s = String::new();
            for n in &notes {
                s.push_str(&format!("- {n}\n"));
            }
            if !notes.is_empty() {
                s.push('\n');
            }
            s.push_str(&render_markdown(&HEADERS, 1, &table_rows(&d)));
            s.push_str(&format!("\n{summary}\n"));
            for t in &tail {
                s.push_str(&format!("- {t}\n"));
            }
            s
        }
        // clap offers no csv here (see `cli::formats`).
        Format::Table | Format::Csv => {
            let mut s = String::new();
            for n in &notes {
                s.push_str(&format!("{n}\n"));
            }
            if !notes.is_empty() {
                s.push('\n');
            }
            s.push_str(&render_table(&HEADERS, 1, &table_rows(&d)));
            s.push_str(&format!("\n{summary}\n"));
            for t in &tail {
                s.push_str(&format!("{t}\n"));
            }
            s
        }
    };
    super::print_out(&text)?;
    match d.regressions() {
        0 => Ok(()),
        n => Err(Error::RunFailed(format!(
            "{n} cell(s) significantly slower in {} than in {} (beyond ±{} %)",
            args.new.display(),
            args.base.display(),
            args.noise_threshold * 100.0
        ))),
    }
}
