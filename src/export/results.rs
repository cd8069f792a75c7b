//! A results folder, `results/<experiment>/`: written atomically (temp file + rename),
//! locked against a second writer, resumable, and rebuildable from `runs/*.json` alone.
//!
//! ```text
//!     plan.json               the experiment as run: matrix, budget, run ids
//!     runs/<id>.json          each worker's full record; runs/<id>.failed.json for failures
//!                             (with `processes = R`: runs/<id>.p1.json … <id>.pR.json)
//!     histograms/<id>.us.csv  HdrHistogram percentile distribution (µs), CSV form (of all
//!                             the cell's processes, merged)
//!     histograms/<id>.us.hgrm the same, text form
//!     histograms/<id>.ns.hlog HdrHistogram interval log (ns): one interval per process, at
//!                             the time its measured phase ran
//!     calibration.json        what observing cost, measured before the experiment ran
//!     cliffs.json             exact sizes where behaviour changes (experiments with find_cliffs)
//!     summary.csv, env.json, plots/*.svg, REPORT.md
//! ```

use crate::analysis::cliff::FoundCliff;
use crate::export::folder::{Claim, Folder, Kind};
use crate::model::experiment::{run_id, Experiment};
use crate::model::record::RunRecord;
use crate::model::record::{Cell, EncodedHistogram, Outcome, RunFailure};
use crate::model::run::RunSpec;
use crate::model::summary::SummaryRow;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use super::folder::{lock_folder, read_limited, write_atomic, ResultsError, HISTOGRAM_SCALING};

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ResultsError + '_ {
    move |source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What was planned for a results folder: the experiment and its runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    pub experiment: Experiment,
    pub runs: Vec<PlannedRun>,
    pub command_line: Vec<String>,
    pub started_unix: u64,
    /// The confidence level the run's intervals and verdicts were made at, which
    /// `report` rebuilds them at; None in plans from before it was kept.
    #[serde(default)]
    pub confidence: Option<f64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlannedRun {
    pub id: String,
    pub spec: RunSpec,
}

impl Plan {
    /// The plan of `experiment`, whose intervals and verdicts are made at `level`.
    pub fn new(experiment: &Experiment, level: f64) -> Self {
        Plan {
            experiment: experiment.clone(),
            runs: experiment
                .runs()
                .into_iter()
                .map(|spec| PlannedRun {
                    id: run_id(&spec),
                    spec,
                })
                .collect(),
            command_line: crate::counters::envinfo::command_line(),
            started_unix: crate::counters::unix_now(),
            confidence: Some(level),
        }
    }

    /// The level its intervals and verdicts are made at (95 % for a plan from before
    /// plans kept it).
    pub fn level(&self) -> f64 {
        self.confidence
            .unwrap_or(crate::analysis::stats::DEFAULT_LEVEL)
    }
}

/// A failure as kept on disk.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FailedRun {
    pub spec: RunSpec,
    pub error: String,
}

/// An open, locked results folder of `alloclab run` (see [`super::folder`]).
pub struct ResultsDir {
    pub root: PathBuf,
    folder: Folder,
}

impl ResultsDir {
    /// Opens and locks `root` for run's results ([`Folder::open`]); nothing changes in
    /// it before [`ResultsDir::start`].
    pub fn open(root: &Path, claim: Claim) -> Result<Self, ResultsError> {
        Ok(ResultsDir {
            root: root.to_path_buf(),
            folder: Folder::open(root, Kind::Run, claim)?,
        })
    }

    /// The folder's one writer.
    pub fn folder(&self) -> &Folder {
        &self.folder
    }

    /// Starts a measurement ([`Folder::start`]): `fresh` for a new one (what an earlier
    /// one left is removed), not for `--resume`.
    pub fn start(&mut self, fresh: bool) -> Result<(), ResultsError> {
        self.folder.start(fresh)?;
        fs::create_dir_all(self.root.join("runs")).map_err(io_err(&self.root))
    }

    /// Says in `folder.json` whether every planned run has its result.
    pub fn finish(&mut self, complete: bool) -> Result<(), ResultsError> {
        self.folder.finish(complete)
    }

    /// Finishes the folder as complete only when nothing of the plan is `missing` (then
    /// named in folder.json).
    pub fn finish_missing(&mut self, missing: Vec<String>) -> Result<(), ResultsError> {
        self.folder.finish_with(missing.is_empty(), missing)
    }

    pub fn save_plan(&self, plan: &Plan) -> Result<(), ResultsError> {
        self.folder.json("plan.json", plan)
    }

    /// Keeps the observer calibration made for this run of the experiment.
    pub fn save_calibration(
        &self,
        c: &crate::analysis::calibration::Calibration,
    ) -> Result<(), ResultsError> {
        self.folder.json("calibration.json", c)
    }

    /// Keeps the exact cliffs found after the runs.
    pub fn save_cliffs(&self, cliffs: &[FoundCliff]) -> Result<(), ResultsError> {
        self.folder.json("cliffs.json", cliffs)
    }

    fn run_path(&self, id: &str) -> PathBuf {
        self.root.join(run_rel(id))
    }

    /// Keeps a cell's evidence (`id`: the cell's).
    pub fn save_evidence(
        &self,
        id: &str,
        evidence: &crate::model::evidence::Recorded,
    ) -> Result<(), ResultsError> {
        self.folder.json(&evidence_rel(id), evidence)
    }

    /// A cell's evidence as an earlier run kept it, where it is of exactly this spec
    /// (for --resume).
    pub fn kept_evidence(&self, id: &str) -> Option<crate::model::evidence::Recorded> {
        load_evidence(&self.root, id)
    }

    /// Keeps a completed run: its record and, for a cell of one process (`id` is then
    /// the cell's), its histogram files; a cell of several gets merged ones when its
    /// report is written.
    pub fn save_run(&self, id: &str, record: &RunRecord) -> Result<(), ResultsError> {
        if !id.contains(PROCESS_MARK) {
            write_histograms(&self.folder, id, &[(id.to_string(), record)])?;
        }
        self.folder.json(&run_rel(id), record)?;
        self.folder.remove(&failed_rel(id))
    }

    /// Keeps a failure so that reports show it; a later successful run replaces it.
    pub fn save_failure(
        &self,
        id: &str,
        spec: &RunSpec,
        failure: &RunFailure,
    ) -> Result<(), ResultsError> {
        let f = FailedRun {
            spec: spec.clone(),
            error: failure.cause.clone(),
        };
        self.folder.json(&failed_rel(id), &f)
    }

    /// A completed run of exactly this spec and budget, if one is on disk (for --resume).
    pub fn completed(
        &self,
        id: &str,
        spec: &RunSpec,
        experiment: &Experiment,
    ) -> Option<RunRecord> {
        let r = load_run(&self.run_path(id)).ok()?;
        (r.spec() == *spec && r.budget == experiment.budget).then_some(r)
    }
}

fn run_rel(id: &str) -> String {
    format!("runs/{id}.json")
}

fn failed_rel(id: &str) -> String {
    format!("runs/{id}.failed.json")
}

fn evidence_rel(id: &str) -> String {
    format!("evidence/{id}.json")
}

/// A cell's evidence (`id`: the cell's), where the folder keeps one; one that does not
/// read is unrecorded, saying why.
fn load_evidence(root: &Path, id: &str) -> Option<crate::model::evidence::Recorded> {
    use crate::model::evidence::Recorded;
    let rel = evidence_rel(id);
    let path = root.join(&rel);
    if fs::symlink_metadata(&path).is_err() {
        return None;
    }
    Some(
        read_limited(&path, 64 << 20)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("{rel}: {e}")))
            .unwrap_or_else(|why| Recorded::Unrecorded(format!("{rel} does not read: {why}"))),
    )
}

fn load_run(path: &Path) -> Result<RunRecord, ResultsError> {
    let text = crate::files::read_to_string(path).map_err(io_err(path))?;
    RunRecord::from_json(&text).map_err(|why| ResultsError::Invalid {
        path: path.to_path_buf(),
        why,
    })
}

/// Writes a cell's histogram files (`id`: the cell's): `histograms/<id>.us.csv` and
/// `.us.hgrm` of all its processes' samples merged, and `histograms/<id>.ns.hlog` with
/// one interval per process — its own histogram over its measured phase. `processes`:
/// each process's file id (`<id>.p3` or the cell's own) and record, in round order.
pub fn write_histograms(
    folder: &Folder,
    id: &str,
    processes: &[(String, &RunRecord)],
) -> Result<(), ResultsError> {
    let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
    let mut intervals = Vec::new();
    for (pid, record) in processes {
        let h = record
            .histogram
            .decode()
            .map_err(|why| ResultsError::Invalid {
                path: folder.path(&run_rel(pid)),
                why,
            })?;
        match &mut merged {
            None => merged = Some(h.clone()),
            Some(m) => m.add(&h).map_err(|e| ResultsError::Invalid {
                path: folder.path(&run_rel(pid)),
                why: format!("its histogram does not add to the cell's: {e:?}"),
            })?,
        }
        let label = match pid
            .strip_prefix(id)
            .and_then(|p| p.strip_prefix(PROCESS_MARK))
        {
            Some(n) => format!("p{n}: process {n} of the cell, {}", run_rel(pid)),
            None => format!("the cell's one process, {}", run_rel(pid)),
        };
        intervals.push(crate::export::hlog::Interval {
            label,
            start_unix_ns: record.measured_start_unix_ns,
            length_ns: record.measured_wall_ns,
            histogram: h,
        });
    }
    let Some(merged) = merged else {
        return Ok(());
    };
    let log = crate::export::hlog::IntervalLog {
        what: format!(
            "latency per iteration of cell {id}; one interval per worker process: its measured phase (the main thread's measured loop), all its threads' samples"
        ),
        intervals,
    };
    folder.histogram(id, &merged, &log)
}

/// Writes `memory/<id>.csv`: every memory sample of every process of cell `id`, one row
/// each (`process`: its file id), as the driver read them; nothing where no process was
/// sampled.
pub fn write_memory(
    folder: &Folder,
    id: &str,
    processes: &[(String, &RunRecord)],
) -> Result<(), ResultsError> {
    let lines: Vec<(String, &[crate::model::memory::MemorySample])> = processes
        .iter()
        .map(|(pid, r)| (pid.clone(), &r.memory_timeline[..]))
        .collect();
    match memory_csv("process", &lines) {
        Some(text) => folder.text(&format!("memory/{id}.csv"), &text),
        None => Ok(()),
    }
}

/// The columns of a memory timeline file after its first (`process` or `run`).
pub const MEMORY_COLUMNS: &str = "t_ms,rss_bytes,pss_bytes,anon_huge_bytes,lazyfree_bytes";

/// A memory timeline file: `first` (the column naming whose samples a row is), then
/// [`MEMORY_COLUMNS`], one row per sample, empty where a sample did not read a field
/// (statm's give Rss only); None where there are no samples.
pub fn memory_csv(
    first: &str,
    lines: &[(String, &[crate::model::memory::MemorySample])],
) -> Option<String> {
    if lines.iter().all(|(_, s)| s.is_empty()) {
        return None;
    }
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    let mut out = format!("{first},{MEMORY_COLUMNS}\n");
    for (who, samples) in lines {
        for s in *samples {
            out.push_str(&format!(
                "{},{:.3},{},{},{},{}\n",
                crate::export::csv::field(who),
                s.t_ms,
                s.rss_bytes,
                opt(s.pss_bytes),
                opt(s.anon_huge_bytes),
                opt(s.lazyfree_bytes)
            ));
        }
    }
    Some(out)
}

/// Marks a process's file id within a cell of several: `<id>.p3`.
const PROCESS_MARK: &str = ".p";

/// The file id of round `round` (0-based) of a cell measured in `processes` processes:
/// the cell's id for one process, `<id>.p<round+1>` for several.
pub fn process_id(id: &str, round: u32, processes: u32) -> String {
    if processes <= 1 {
        id.to_string()
    } else {
        format!("{id}{PROCESS_MARK}{}", round + 1)
    }
}

/// A cell's processes merged into one outcome, for what takes one record (percentile
/// plots, notes): the first record, with the histogram of all the processes' samples
/// (histograms add) and their total iterations. Failures and cells of one process are
/// their single outcome.
pub fn merged_outcome(cell: &Cell) -> Option<Outcome> {
    let records: Vec<&RunRecord> = cell.records().map(|(_, r)| r).collect();
    // A failed process fails the cell (as in its summary row): its first failure.
    let failure = cell.runs.iter().find(|(_, r)| r.is_err());
    let Some(first) = records.first().filter(|_| failure.is_none()) else {
        return failure.or(cell.runs.first()).map(|(_, r)| Outcome {
            spec: cell.spec.clone(),
            result: r.clone(),
        });
    };
    if records.len() == 1 {
        return Some(Outcome {
            spec: cell.spec.clone(),
            result: Ok((*first).clone()),
        });
    }
    let mut merged = (*first).clone();
    let mut h = first.histogram.decode().ok()?;
    for r in &records[1..] {
        h.add(r.histogram.decode().ok()?).ok()?;
    }
    merged.histogram = EncodedHistogram::encode(&h);
    merged.iterations = records.iter().map(|r| r.iterations).sum();
    merged.samples = records.iter().map(|r| r.samples).sum();
    Some(Outcome {
        spec: cell.spec.clone(),
        result: Ok(merged),
    })
}

/// What a results folder holds: its plan and, per planned run (a cell), what its
/// processes left — records or failures (runs never attempted are absent).
pub struct Loaded {
    pub plan: Plan,
    pub cells: Vec<Cell>,
    /// The observer calibration, if the run made one.
    pub calibration: Option<crate::analysis::calibration::Calibration>,
    /// Exact cliffs found by bisection after the runs, if any were looked for.
    pub cliffs: Vec<FoundCliff>,
    /// The steps of the plan after its runs that did not finish (the bisection of the
    /// cliffs, the confirmation of their thresholds), in words: from the run in memory,
    /// or from folder.json on disk. Empty when they finished (or the plan has none).
    pub unfinished: Vec<String>,
}

/// How [`Loaded::missing`] names the processes without a result (the rest of what it
/// names are the unfinished steps).
const PROCESSES_MISSING: &str = "planned worker processes";

impl Loaded {
    /// The folder read again at confidence `level` (`report --confidence`): its plan
    /// and every cell make their intervals and verdicts at it.
    pub fn at_level(mut self, level: f64) -> Self {
        self.plan.confidence = Some(level);
        for c in &mut self.cells {
            c.level = level;
        }
        self
    }

    /// Worker processes with a result (a record or a failure), and planned.
    pub fn process_counts(&self) -> (usize, usize) {
        let done = self.cells.iter().map(|c| c.runs.len()).sum();
        let per_cell = self.plan.experiment.processes.max(1) as usize;
        (done, self.plan.runs.len() * per_cell)
    }

    /// Whether the whole plan has results: every process, and every step after them.
    pub fn complete(&self) -> bool {
        let (done, planned) = self.process_counts();
        done >= planned && self.unfinished.is_empty()
    }

    /// What of the plan has no result, in words, for every surface that says INCOMPLETE
    /// ("6 of the 144 planned worker processes (2 cells have none)", then each unfinished
    /// step). Empty when complete.
    pub fn missing(&self) -> Vec<String> {
        let (done, planned) = self.process_counts();
        let mut out = Vec::new();
        if done < planned {
            let none = self.plan.runs.len() - self.cells.len();
            out.push(format!(
                "{} of the {} {PROCESSES_MISSING}{}",
                crate::fmt::group_thousands((planned - done) as i64),
                crate::fmt::group_thousands(planned as i64),
                match none {
                    0 => String::new(),
                    1 => " (1 cell has none)".into(),
                    n => format!(" ({n} cells have none)"),
                }
            ));
        }
        out.extend(self.unfinished.iter().cloned());
        out
    }

    /// The planned sizes of the series `jump` is on (every planned run alike but for its
    /// size), in order.
    fn planned_sizes(&self, j: &crate::analysis::jumps::Jump) -> Vec<u64> {
        let mut sizes: Vec<u64> = self
            .plan
            .runs
            .iter()
            .map(|r| &r.spec)
            .filter(|s| {
                s.workload == j.workload
                    && s.threads == j.threads
                    && s.variant == j.variant
                    && s.allocator_label() == j.allocator
            })
            .map(|s| s.size)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Whether a change found between two measured sizes is between neighbours of the
    /// plan: one with a planned size between them that has no result (interrupted, or
    /// failed) is not a change anyone measured, and is not stated.
    pub fn neighbours_in_plan(&self, j: &crate::analysis::jumps::Jump) -> bool {
        let sizes = self.planned_sizes(j);
        !sizes.iter().any(|&n| n > j.from_size && n < j.to_size)
    }

    /// [`crate::analysis::jumps::fault_jumps`] and `syscall_jumps` of `rows` (the cells'
    /// rows), only between neighbouring sizes of the plan.
    pub fn jumps(
        &self,
        rows: &[SummaryRow],
    ) -> (
        Vec<crate::analysis::jumps::Jump>,
        Vec<crate::analysis::jumps::Jump>,
    ) {
        let keep = |v: Vec<crate::analysis::jumps::Jump>| {
            v.into_iter()
                .filter(|j| self.neighbours_in_plan(j))
                .collect::<Vec<_>>()
        };
        (
            keep(crate::analysis::jumps::fault_jumps(rows)),
            keep(crate::analysis::jumps::syscall_jumps(rows)),
        )
    }

    /// The processes a cell has and the planned number, where it has fewer.
    pub fn short_of(&self, cell: &Cell) -> Option<(usize, usize)> {
        let planned = self.plan.experiment.processes.max(1) as usize;
        (cell.runs.len() < planned).then_some((cell.runs.len(), planned))
    }
}

/// What a planned run's processes left on disk, in round order; `None` if none ran.
pub fn load_cell(
    root: &Path,
    run: &PlannedRun,
    experiment: &Experiment,
    level: f64,
) -> Result<Option<Cell>, ResultsError> {
    let processes = experiment.processes;
    let mut cell = Cell {
        spec: run.spec.clone(),
        runs: Vec::new(),
        level,
        evidence: None,
    };
    for round in 0..processes.max(1) {
        let id = process_id(&run.id, round, processes);
        if let Some(o) = load_outcome(root, &id, run, experiment)? {
            cell.runs.push((round, o.result));
        }
    }
    cell.evidence = load_evidence(root, &run.id);
    Ok((!cell.runs.is_empty()).then_some(cell))
}

/// One process's record or failure as kept on disk (`id`: its file id); `None` if it
/// never ran. A record or failure of another spec or budget than the plan's (a file
/// edited or copied in by hand) is refused, never shown under this cell.
pub fn load_outcome(
    root: &Path,
    id: &str,
    run: &PlannedRun,
    experiment: &Experiment,
) -> Result<Option<Outcome>, ResultsError> {
    let ok = root.join("runs").join(format!("{id}.json"));
    let failed = root.join("runs").join(format!("{id}.failed.json"));
    let mismatch = |path: &Path, what: &str, theirs: String, planned: String| {
        ResultsError::Invalid {
        path: path.to_path_buf(),
        why: format!(
            "its {what} ({theirs}) is not the plan's ({planned}); it belongs to another measurement: remove it, or run the experiment again into a folder of its own"
        ),
    }
    };
    let result = if ok.exists() {
        let r = load_run(&ok)?;
        if r.spec() != run.spec {
            return Err(mismatch(
                &ok,
                "spec",
                r.spec().to_string(),
                run.spec.to_string(),
            ));
        }
        if r.budget != experiment.budget {
            return Err(mismatch(
                &ok,
                "budget",
                format!("{:?}", r.budget),
                format!("{:?}", experiment.budget),
            ));
        }
        Ok(r)
    } else if failed.exists() {
        let text = crate::files::read_to_string(&failed).map_err(io_err(&failed))?;
        let f: FailedRun = serde_json::from_str(&text).map_err(|e| ResultsError::Invalid {
            path: failed.clone(),
            why: e.to_string(),
        })?;
        if f.spec != run.spec {
            return Err(mismatch(
                &failed,
                "spec",
                f.spec.to_string(),
                run.spec.to_string(),
            ));
        }
        Err(RunFailure { cause: f.error })
    } else {
        return Ok(None);
    };
    Ok(Some(Outcome {
        spec: run.spec.clone(),
        result,
    }))
}

/// The exact cliffs kept in a results folder (none if it has no cliffs.json).
pub fn load_cliffs(root: &Path) -> Vec<FoundCliff> {
    crate::files::read_to_string(root.join("cliffs.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// What folder.json says did not finish besides the processes, for [`Loaded::unfinished`]:
/// its own words where it names them; where an older folder.json says only `complete:
/// false` with every process there, that some step after them did not finish.
fn unfinished_of(root: &Path, plan: &Plan, cells: &[Cell]) -> Result<Vec<String>, ResultsError> {
    let Some(status) = super::folder::status(root)? else {
        return Ok(Vec::new());
    };
    if status.complete {
        return Ok(Vec::new());
    }
    let processes = |m: &String| m.contains(PROCESSES_MISSING);
    if !status.missing.is_empty() {
        return Ok(status
            .missing
            .into_iter()
            .filter(|m| !processes(m))
            .collect());
    }
    let done: usize = cells.iter().map(|c| c.runs.len()).sum();
    let planned = plan.runs.len() * plan.experiment.processes.max(1) as usize;
    Ok(if done >= planned && plan.experiment.find_cliffs {
        vec!["the steps after the runs (the cliffs' bisection or confirmation): folder.json says the run did not finish".into()]
    } else {
        Vec::new()
    })
}

/// Reads a results folder's plan and runs.
pub fn load(root: &Path) -> Result<Loaded, ResultsError> {
    let plan_path = root.join("plan.json");
    if !plan_path.exists()
        && matches!(super::folder::status(root), Ok(Some(s)) if s.kind == Kind::Run)
    {
        // The lab's run folder, stopped before its plan was written.
        return Err(ResultsError::Invalid {
            path: root.to_path_buf(),
            why: "its run was stopped before it wrote its plan (plan.json): nothing of it was measured; run the experiment again".into(),
        });
    }
    let text = crate::files::read_to_string(&plan_path).map_err(|e| ResultsError::Invalid {
        path: plan_path.clone(),
        why: format!("{e}; is this a results folder written by `alloclab run`?"),
    })?;
    let plan: Plan = serde_json::from_str(&text).map_err(|e| ResultsError::Invalid {
        path: plan_path,
        why: e.to_string(),
    })?;
    let mut cells = Vec::new();
    for run in &plan.runs {
        if let Some(c) = load_cell(root, run, &plan.experiment, plan.level())? {
            cells.push(c);
        }
    }
    let calibration = crate::files::read_to_string(root.join("calibration.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let cliffs = load_cliffs(root);
    let unfinished = unfinished_of(root, &plan, &cells)?;
    Ok(Loaded {
        plan,
        cells,
        calibration,
        cliffs,
        unfinished,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_whole_files_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(crate::files::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(dir.path().join("a")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_second_writer_is_refused_with_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = ResultsDir::open(dir.path(), Claim::Own).unwrap();
        // flock locks belong to the open file description: a second open is refused
        // even within one process.
        let e = ResultsDir::open(dir.path(), Claim::Own)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(first);
        assert!(ResultsDir::open(dir.path(), Claim::Own).is_ok());
    }
}
