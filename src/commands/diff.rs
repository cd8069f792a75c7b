//! `alloclab diff BASE NEW`: two results (folders of `alloclab run`, or compare's JSON or
//! CSV output) matched cell by cell — what changed, by how much, whether significantly,
//! and which differences in the environment could explain it. Exit 1 when some cell got
//! significantly slower, so that a CI job can guard an allocator upgrade.

use crate::analysis::diff::{diff_with, CellChange, Diff, DiffInput, Drift};
use crate::cli::DiffArgs;
use crate::error::{Error, Result};
use crate::export::diff_screen::{change_headers, change_words};
use crate::export::table::{render_markdown, render_table, TableRow};
use crate::export::Format;
use crate::fmt::{fmt_ns, human_bytes, signed};
use std::collections::BTreeMap;
use std::path::Path;

/// One side: its rows, for a results folder its environment (flattened), and what ran
/// of its plan when the plan did not finish.
struct Side {
    rows: Vec<DiffInput>,
    env: Option<BTreeMap<String, String>>,
    incomplete: Option<String>,
}

/// The largest file diff reads: more than the lab's outputs need (compare's JSON takes
/// about 2 KB a cell at 6 processes, 14 KB at 1,000: 40,000 cells of 6 are about
/// 80 MB), far less than memory.
pub const MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// What diff reads, for the messages that refuse something else.
const READS: &str = "diff compares results folders of `alloclab run` or `alloclab exec --out` (or their exec.json), and the output of `alloclab compare --format json` / `--format csv` or `alloclab exec --format json`";

/// The text of `path`: a regular file (symlinks followed) of at most
/// [`MAX_INPUT_BYTES`], in UTF-8 (the lab's one bounded reader), without the byte order
/// mark an editor may have put first (U+FEFF: a JSON file with one reads as one without,
/// as a CSV file always did), or why not.
fn read_bounded(path: &Path) -> std::result::Result<String, String> {
    use crate::export::results::{read_limited, ResultsError};
    let text = read_limited(path, MAX_INPUT_BYTES).map_err(|e| match e {
        ResultsError::Invalid { why, .. } => format!("{why}; {READS}"),
        ResultsError::Io { source, .. } => format!("cannot read it: {source}"),
        other => other.to_string(),
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

fn load(path: &Path) -> Result<Side> {
    let bad = |why: String| Error::BadInput(format!("{}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    if meta.is_dir() {
        return load_folder(path);
    }
    let text = read_bounded(path).map_err(bad)?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return load_object(path, &text);
    }
    let rows: Vec<DiffInput> = if trimmed.starts_with('[') {
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
    let incomplete = rows_incomplete(&rows);
    Ok(Side {
        rows,
        env: None,
        incomplete,
    })
}

/// A JSON object: exec's record (read as its folder is), or another output of the lab,
/// named and refused.
fn load_object(path: &Path, text: &str) -> Result<Side> {
    let bad = |why: String| Error::BadInput(format!("{}: {why}", path.display()));
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not JSON ({e}); {READS}")))?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    let has = |k: &str| value.get(k).is_some();
    let what = match schema {
        s if s == crate::model::command::SCHEMA => return load_exec_record(path, text, None),
        s if s == crate::export::trace::SCHEMA => {
            "the trace.json of `alloclab trace` (one cell's timeline and call stacks)"
        }
        s if s == crate::export::trace::COMMAND_SCHEMA => {
            "the trace.json of `alloclab trace -- CMD` (a command's timeline and call stacks)"
        }
        "alloclab.sweep/1" => "the sweep.json of `alloclab sweep` (one command over sizes)",
        s if s.starts_with("alloclab.folder/") => {
            "the folder.json of a results folder; give the folder itself"
        }
        s if s == crate::model::record::SCHEMA => {
            "one worker process's record (runs/*.json of a results folder); give the results folder"
        }
        _ if has("diff") && has("base") && has("new") => {
            "the output of `alloclab diff --format json`"
        }
        _ if has("experiment") && has("runs") => {
            "the plan.json of a results folder of `alloclab run`; give the folder itself"
        }
        _ if has("kernel") && has("cpu_model") => {
            "the env.json of a results folder; give the folder itself"
        }
        _ => "a JSON object that is none of the lab's results",
    };
    Err(bad(format!("this is {what}; {READS}")))
}

/// A results folder: `alloclab run`'s (summary.csv) or `alloclab exec`'s (exec.json);
/// another command's is named and refused.
fn load_folder(path: &Path) -> Result<Side> {
    let bad = |why: String| Error::BadInput(format!("{}: {why}", path.display()));
    let (kind, complete) = folder_status(path);
    let marker = |f: &str| path.join(f).exists();
    let other = match kind.as_deref() {
        Some("sweep") => Some("sweep"),
        Some("trace") => Some("trace"),
        Some(_) => None,
        None if marker("sweep.json") => Some("sweep"),
        None if marker("trace.json") => Some("trace"),
        None => None,
    };
    if let Some(other) = other {
        let what = if other == "sweep" {
            "one command over sizes"
        } else {
            "timelines and call stacks"
        };
        return Err(bad(format!(
            "this is a results folder of `alloclab {other}` ({what}); {READS}"
        )));
    }
    if kind.as_deref() == Some("exec") || marker("exec.json") {
        let file = path.join("exec.json");
        let text = read_bounded(&file).map_err(|e| bad(format!("exec.json: {e}")))?;
        return load_exec_record(path, &text, complete);
    }
    let summary = path.join("summary.csv");
    if !summary.exists() && kind.as_deref() == Some("run") {
        // The run's folder before its report: still being written, or stopped early.
        let now = match crate::export::folder::writer_of(path) {
            Some(holder) => format!(
                "its run is still going (alloclab {holder} is writing it); diff it when the run has finished"
            ),
            None => format!(
                "its run stopped before writing its report (interrupted or killed); `alloclab report {}` writes it from the runs it kept, or `alloclab run --resume` finishes the run",
                path.display()
            ),
        };
        return Err(bad(format!(
            "a results folder of `alloclab run` without summary.csv yet: {now}"
        )));
    }
    if !summary.exists() {
        return Err(bad(format!(
            "a folder without summary.csv or exec.json, so not a results folder of `alloclab run` or `alloclab exec`; {READS}"
        )));
    }
    let text = read_bounded(&summary).map_err(|e| bad(format!("summary.csv: {e}")))?;
    let env = read_bounded(&path.join("env.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|v| {
            let mut flat = BTreeMap::new();
            flatten("", &v, &mut flat);
            flat
        });
    let rows = from_csv(&text).map_err(|e| bad(format!("summary.csv: {e}")))?;
    let incomplete = match complete {
        Some(false) => Some(unfinished(path, &rows)),
        _ => rows_incomplete(&rows),
    };
    Ok(Side {
        rows,
        env,
        incomplete,
    })
}

/// folder.json's word on a folder: what kind of results it holds and whether its plan
/// finished (None where it does not say).
fn folder_status(path: &Path) -> (Option<String>, Option<bool>) {
    // folder.json: what the folder holds and whether its plan finished.
    let status: Option<serde_json::Value> = path
        .join(crate::export::folder::STATUS_FILE)
        .is_file()
        .then(|| read_bounded(&path.join(crate::export::folder::STATUS_FILE)))
        .and_then(|t| t.ok())
        .and_then(|t| serde_json::from_str(&t).ok());
    let kind = status
        .as_ref()
        .and_then(|s| s.get("kind"))
        .and_then(|k| k.as_str())
        .map(str::to_string);
    let complete = status
        .as_ref()
        .and_then(|s| s.get("complete"))
        .and_then(|c| c.as_bool());
    (kind, complete)
}

/// What an unfinished run folder holds against its plan.
fn unfinished(path: &Path, rows: &[DiffInput]) -> String {
    let planned = read_bounded(&path.join("plan.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("runs").and_then(|r| r.as_array()).map(Vec::len));
    let ok = rows.iter().filter(|r| r.status == "ok").count();
    format!(
        "folder.json says \"complete\": false (its plan did not finish: interrupted, killed or still running); {}",
        match planned {
            Some(p) => format!(
                "summary.csv holds {} of the plan's {} runs, {ok} ok",
                rows.len(),
                p
            ),
            None => format!("summary.csv holds {} runs, {ok} ok", rows.len()),
        }
    )
}

/// An `alloclab exec` record (exec.json, given as its folder or as the file): one row
/// per allocator from its runs; the environment and the command as the environment to
/// compare. `folder_complete` is the folder's folder.json, where there is one.
fn load_exec_record(path: &Path, text: &str, folder_complete: Option<bool>) -> Result<Side> {
    let bad = |why: String| Error::BadInput(format!("{}: {why}", path.display()));
    let record: crate::engine::command::ExecRecord = serde_json::from_str(text)
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
    let incomplete = (!record.complete || folder_complete == Some(false)).then(|| {
        let ran: Vec<String> = record
            .allocators
            .iter()
            .map(|a| format!("{} {}", a.allocator, a.runs.len()))
            .collect();
        format!(
            "exec.json says \"complete\": false (its rounds did not all run: interrupted, killed or still running); runs of the {} requested per allocator: {}",
            record.runs_requested,
            ran.join(", ")
        )
    });
    Ok(Side {
        rows,
        env: Some(env),
        incomplete,
    })
}

/// compare's rows of a session that did not finish (`"complete": false`): how it
/// stopped and how many processes its cells have of the planned.
fn rows_incomplete(rows: &[DiffInput]) -> Option<String> {
    let first = rows.iter().find(|r| r.complete == Some(false))?;
    let how = match first.stopped_by.as_deref() {
        Some("max-time") => "--max-time stopped its planned rounds".to_string(),
        Some(signal) => format!("it was interrupted by {signal}"),
        None => "it did not finish".to_string(),
    };
    let counts: Vec<u32> = rows.iter().filter_map(|r| r.processes).collect();
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    let range = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    };
    let planned = first
        .processes_planned
        .map_or(String::new(), |p| format!(" of the {p} planned"));
    Some(format!(
        "its rows say \"complete\": false ({how}); its cells have {range}{planned} processes (column processes)"
    ))
}

fn from_csv(text: &str) -> std::result::Result<Vec<DiffInput>, String> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map(|h| h.iter().map(str::to_string).collect())
        .unwrap_or_default();
    let has = |k: &str| header.iter().any(|h| h == k);
    if !has("workload") {
        let what = if has("wall_median_ms") && has("allocator") {
            Some("the summary.csv of `alloclab exec`; give its folder (with exec.json)")
        } else if has("size") && has("per") && has("time_ns") {
            Some("the summary.csv of `alloclab sweep` (one command over sizes)")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(format!("this is {what}; {READS}"));
        }
    }
    reader
        .deserialize()
        .collect::<std::result::Result<Vec<DiffInput>, _>>()
        .map_err(|e| format!("not a summary CSV of the lab: {e}; {READS}"))
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
                change_words(c, d.level),
            ]
            .into_iter()
            .chain(c.changes.iter().map(|(_, v)| delta(v)))
            .chain([c.rss_end_bytes_change.map_or("n/a".into(), |v| {
                let sign = if v < 0.0 { "-" } else { "+" };
                format!("{sign}{}", human_bytes(v.abs() as u64))
            })])
            .collect(),
            failure: None,
        })
        .collect()
}

/// The table's columns: the cell, its times and change, then the change of each count
/// a diff gives per iteration (by its short name, "Δ <short>/it") and of the end RSS.
fn headers() -> Vec<String> {
    change_headers("new vs base (interval)", "/it", &["Δ rss_end"])
}

/// A spec in two `--pair`s of one side: which one and where.
fn pair_given_twice(pairs: &[(String, String)]) -> Option<String> {
    for (side, pick) in [
        (
            "BASE",
            (|p: &(String, String)| p.0.clone()) as fn(&(String, String)) -> String,
        ),
        ("NEW", |p: &(String, String)| p.1.clone()),
    ] {
        let mut seen: BTreeMap<String, &(String, String)> = BTreeMap::new();
        for p in pairs {
            if let Some(first) = seen.insert(pick(p), p) {
                return Some(format!(
                    "--pair: {} is given twice as a {side} spec (--pair {}={} and --pair {}={}); a spec's cells can be matched with one other spec only: give it in one --pair",
                    pick(p),
                    first.0,
                    first.1,
                    p.0,
                    p.1
                ));
            }
        }
    }
    None
}

/// What the between-run drift was and what was done about it, in one line.
/// The host's shift between the runs, and whether the ratios above were read against
/// it; nothing where no cell could tell it (exec results, a single cell).
fn host_line(host: &crate::analysis::diff::HostReference) -> Option<String> {
    let n = host.cells.len();
    match (host.ratio, host.applied, &host.not_applied) {
        (Some(r), true, _) => Some(format!(
            "host: the {n} cells whose loop calls no allocator moved by {:+.1} % alike (±{:.1} %), taken as the machine's speed between the runs; every ratio above is read against it (--no-host-reference: as measured)",
            100.0 * (r - 1.0),
            100.0 * 1.96 * host.log_se.unwrap_or(0.0)
        )),
        (Some(r), false, Some(why)) => Some(format!(
            "host: the {n} cells whose loop calls no allocator moved by {:+.1} % alike; not read against ({why})",
            100.0 * (r - 1.0)
        )),
        (None, _, Some(why)) if n > 0 => Some(format!("host: not estimated ({why})")),
        _ => None,
    }
}

/// The host's change in the cost of a page fault between the runs, and which ratios
/// were read against it; nothing where no cell faults.
fn faults_line(f: &crate::analysis::diff::FaultReference, level: f64) -> Option<String> {
    let n = f.cells.len();
    let k = f.allocators.len();
    match (f.ns_per_fault, f.applied, &f.not_applied) {
        (Some(d), true, _) => {
            let skipped = if f.skipped > 0 {
                format!(
                    "; {} left as measured (the shift would take its interval below zero)",
                    f.skipped
                )
            } else {
                String::new()
            };
            let z = crate::analysis::stats::normal_quantile(0.5 + 0.5 * level);
            Some(format!(
                "faults: the {k} allocators whose {n} cells fault as often in both runs moved alike, by {d:+.0} ns a fault (±{:.0} ns at {}): taken as the host's cost of a fault, not theirs (a change all of them share is read so too); {} faulting cell(s) above are each read against the other allocators' change{skipped} (--no-fault-reference: as measured)",
                z * f.se_ns.unwrap_or(0.0),
                crate::analysis::stats::level_text(level),
                f.read
            ))
        }
        (_, false, Some(why)) if n > 0 || why.contains("without allocation counts") => Some(
            format!("faults: the faulting cells are left as measured ({why})"),
        ),
        _ => None,
    }
}

fn drift_line(drift: &Drift, threshold: f64) -> String {
    let common = drift
        .common_ratio
        .filter(|r| (r - 1.0).abs() > threshold)
        .map(|r| {
            format!(
                "; the median cell moved by {:+.1} %: if every cell moved so, that is a change under all of them or the whole machine faster or slower between the runs — two runs cannot tell these apart",
                100.0 * (r - 1.0)
            )
        })
        .unwrap_or_default();
    match (drift.spread, drift.widened_by, &drift.not_applied) {
        (Some(spread), Some(k), _) if k > 1.0 => format!(
            "between runs: the cells' shifts spread {spread:.1}x as wide as their within-run intervals allow (robust spread of {} cells around their median shift of {:+.1} %): every interval widened {k:.1}x for the drift between the two runs (--no-drift-allowance: within-run intervals); where many cells changed for real, the spread is theirs too and hides them — one interleaved session tells{common}",
            drift.cells,
            100.0 * (drift.common_ratio.unwrap_or(1.0) - 1.0)
        ),
        (Some(spread), Some(_), _) => format!(
            "between runs: the cells' shifts stay within their within-run intervals (spread {spread:.1} over {} cells): nothing widened{common}",
            drift.cells
        ),
        (Some(spread), None, Some(why)) => format!(
            "between runs: not allowed for ({why}); the cells' shifts spread {spread:.1}x as wide as their within-run intervals allow, over {} cells{common}",
            drift.cells
        ),
        (_, _, why) => format!(
            "between runs: drift not estimated ({}): the intervals hold each run's own noise only, not the machine's drift between the runs",
            why.as_deref().unwrap_or("no cells with intervals")
        ),
    }
}

pub fn run(args: &DiffArgs, level: f64) -> Result<()> {
    let (base, new) = sides(args)?;
    let readings = crate::analysis::diff::Readings {
        drift_allowance: !args.no_drift_allowance,
        host_reference: !args.no_host_reference,
        fault_reference: !args.no_host_reference && !args.no_fault_reference,
    };
    let Some(d) = diff_with(
        &base.rows,
        &new.rows,
        args.noise_threshold,
        level,
        readings,
        &crate::ui::interrupt::interrupted,
    ) else {
        return Err(Error::Interrupted(
            "while comparing the cells; nothing printed".into(),
        ));
    };
    if d.cells.is_empty() {
        return Err(nothing_in_common(args, &base, &new));
    }
    let env = env_changes(&base, &new);
    let notes = notes(args, &base, &new, &d, &env);
    let tail = tail(&d, args.noise_threshold);
    let summary = summary(&d, args.noise_threshold);
    let text = render(args, &base, &new, &d, &env, &notes, &summary, &tail)?;
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

/// Both sides loaded and checked: finished (unless --allow-incomplete), --pair's cells
/// renamed as one, every cell given once.
fn sides(args: &DiffArgs) -> Result<(Side, Side)> {
    if let Some(why) = pair_given_twice(&args.pairs) {
        return Err(Error::BadInput(why));
    }
    let base = load(&args.base)?;
    let new = load(&args.new)?;
    // A side whose plan did not finish is not compared as if it had, unless asked.
    for (side, path) in [(&base, &args.base), (&new, &args.new)] {
        if let (Some(why), false) = (&side.incomplete, args.allow_incomplete) {
            return Err(Error::BadInput(format!(
                "{} is incomplete: {why}; diff compares finished measurements: run it again to the end, or give --allow-incomplete to compare what ran (the output then says which side is incomplete)",
                path.display()
            )));
        }
    }
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
    Ok((base, new))
}

/// The error when the two sides share no cell, naming what each measured.
fn nothing_in_common(args: &DiffArgs, base: &Side, new: &Side) -> Error {
    let specs = |s: &Side| {
        let mut v: Vec<&str> = s.rows.iter().map(|r| r.allocator_spec.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v.join(", ")
    };
    Error::BadInput(format!(
        "no cell is in both {} ({}) and {} ({}): they measured different workloads, sizes or allocators; to compare differently named allocators, give --pair BASE_SPEC=NEW_SPEC",
        args.base.display(),
        specs(base),
        args.new.display(),
        specs(new)
    ))
}

/// What is said before the cells: an incomplete side, a changed command, the
/// environment and the allocator versions that changed.
fn notes(args: &DiffArgs, base: &Side, new: &Side, d: &Diff, env: &[String]) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    // An incomplete side (--allow-incomplete) is the first thing to know.
    for (name, side, path) in [("BASE", &base, &args.base), ("NEW", &new, &args.new)] {
        if let Some(why) = &side.incomplete {
            notes.push(format!("INCOMPLETE {name}: {}: {why}", path.display()));
        }
    }
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
    // Workers placed differently move every time: said before the cells.
    notes.extend(d.placement_change.iter().map(|p| {
        format!("MEASURED DIFFERENTLY: {p}: every ratio below carries that too; measure both sides alike")
    }));
    notes
}

/// What is said after the cells: the drift between the runs, what to confirm, and the
/// cells only one side has.
fn tail(d: &Diff, threshold: f64) -> Vec<String> {
    let mut tail: Vec<String> = host_line(&d.host).into_iter().collect();
    tail.extend(faults_line(&d.faults, d.level));
    tail.push(drift_line(&d.drift, threshold));
    let called = d
        .cells
        .iter()
        .filter(|c| {
            matches!(
                c.verdict,
                Some(
                    crate::analysis::stats::Verdict::Slower
                        | crate::analysis::stats::Verdict::Faster
                )
            )
        })
        .count();
    if called > 0 {
        tail.push(format!(
            "CONFIRM: {called} cell(s) called changed between two separate runs; measure both sides in one interleaved session to confirm: both allocator builds as two specs of one `alloclab compare` or `alloclab exec` (`--allocators 'old=/path/old.so,new=/path/new.so'`), or two versions of a program as `alloclab exec -c 'old/prog …' -c 'new/prog …'`, so that every round pairs them and no drift between runs is in the ratio"
        ));
    }
    tail.extend(d.only_in_base.iter().map(|k| format!("only in BASE: {k}")));
    tail.extend(d.only_in_new.iter().map(|k| format!("only in NEW: {k}")));
    tail
}

/// One line of counts: slower, faster, undecided, within the band, inconclusive, and how
/// the intervals were made.
fn summary(d: &Diff, t: f64) -> String {
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
    // "No significant difference" is two things: an interval inside the band (no change
    // beyond it) and one that reaches across an edge of it (inconclusive).
    let no_difference = |c: &&CellChange| {
        c.verdict == Some(crate::analysis::stats::Verdict::NoSignificantDifference)
    };
    let within = d
        .cells
        .iter()
        .filter(no_difference)
        .filter(|c| {
            c.ratio_ci_low.is_some_and(|l| l >= 1.0 - t)
                && c.ratio_ci_high.is_some_and(|h| h <= 1.0 + t)
        })
        .count();
    let across = d.cells.iter().filter(no_difference).count() - within;
    format!(
        "{} cells compared: {} slower, {} faster, {} undecided (interval below {}), {within} within ±{} %, {across} inconclusive (the interval reaches across ±{} %), the rest without an interval; intervals: {}",
        d.cells.len(),
        count(crate::analysis::stats::Verdict::Slower),
        count(crate::analysis::stats::Verdict::Faster),
        count(crate::analysis::stats::Verdict::Undecided),
        crate::analysis::stats::level_text(d.level),
        t * 100.0,
        t * 100.0,
        if methods.is_empty() { "none".to_string() } else { methods.join(", ") }
    )
}

/// The diff in the format asked for.
#[allow(clippy::too_many_arguments)]
fn render(
    args: &DiffArgs,
    base: &Side,
    new: &Side,
    d: &Diff,
    env: &[String],
    notes: &[String],
    summary: &str,
    tail: &[String],
) -> Result<String> {
    Ok(match args.format {
        Format::Json => {
            let value = serde_json::json!({
                "base": args.base.display().to_string(),
                "new": args.new.display().to_string(),
                "noise_threshold": args.noise_threshold,
                "base_complete": base.incomplete.is_none(),
                "new_complete": new.incomplete.is_none(),
                "incomplete": {"base": base.incomplete, "new": new.incomplete},
                "environment_changes": env,
                "diff": d,
            });
            serde_json::to_string_pretty(&value).map_err(Error::failed)? + "\n"
        }
        Format::Markdown => {
            let mut s = String::new();
            for n in notes {
                s.push_str(&format!("- {n}\n"));
            }
            if !notes.is_empty() {
                s.push('\n');
            }
            let h = headers();
            let h: Vec<&str> = h.iter().map(String::as_str).collect();
            s.push_str(&render_markdown(&h, 1, &table_rows(d)));
            s.push_str(&format!("\n{summary}\n"));
            for t in tail {
                s.push_str(&format!("- {t}\n"));
            }
            s
        }
        Format::Table if !args.verbose => crate::export::diff_screen::answer_screen(
            d,
            notes,
            summary,
            tail,
            crate::fmt::screen_width(),
        ),
        // clap offers no csv here, nor the CI services' formats (see `cli::formats`).
        Format::Table | Format::Csv | Format::Bmf | Format::GithubActionBenchmark => {
            let mut s = String::new();
            for n in notes {
                s.push_str(&format!("{n}\n"));
            }
            if !notes.is_empty() {
                s.push('\n');
            }
            let h = headers();
            let h: Vec<&str> = h.iter().map(String::as_str).collect();
            s.push_str(&render_table(&h, 1, &table_rows(d)));
            s.push_str(&format!("\n{summary}\n"));
            for t in tail {
                s.push_str(&format!("{t}\n"));
            }
            s
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// summary.csv as the lab writes it reads back with each process's p50, from one
    /// process as from several, and old files' JSON arrays read as they did.
    #[test]
    fn the_lab_reads_back_the_process_p50s_it_wrote_in_either_form() {
        let mut one = crate::model::summary::sample("system", "in-place", 17_279, 0.0, None);
        one.process_p50_ns = Some(vec![17_279]);
        let mut two = crate::model::summary::sample("system", "out-of-place", 9_000, 1.0, None);
        two.process_p50_ns = Some(vec![9_000, 9_100]);
        let text = crate::export::csv::to_csv(&[one, two]);
        let rows = from_csv(&text).unwrap();
        assert_eq!(rows[0].process_p50_ns, [17_279.0]);
        assert_eq!(rows[1].process_p50_ns, [9_000.0, 9_100.0]);
        let old = text.replace("9000 9100", "\"[9000,9100]\"");
        assert_ne!(old, text);
        assert_eq!(
            from_csv(&old).unwrap()[1].process_p50_ns,
            [9_000.0, 9_100.0]
        );
        let bad = text.replace("9000 9100", "12 abc");
        let e = from_csv(&bad).unwrap_err();
        assert!(e.contains("process_p50_ns") && e.contains("abc"), "{e}");
    }
}
