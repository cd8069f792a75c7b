//! The one results-folder writer of `run`, `exec` and `sweep`.
//!
//! A folder holds exactly one measurement of one kind. Opening it creates it, refuses a
//! folder of another kind, takes its lock (a second writer is refused with the holder's
//! pid) and, for a fresh measurement, removes what an earlier one of the same kind left
//! (only the lab's own files), so that nothing of two plans is ever mixed. Every file is
//! written atomically (a temporary file and a rename). `folder.json` says what the
//! folder holds and whether the plan finished:
//!
//! ```text
//!     { "schema": "alloclab.folder/1", "kind": "sweep", "complete": false,
//!       "started": "2026-11-23T09:12:01Z", "finished": null, "command_line": [...] }
//! ```
//!
//! `complete` is false from the moment the folder is opened until the whole plan (every
//! run, size and bisection) is done: a folder of an interrupted, killed or failing
//! measurement says so, as does its REPORT.md.

use super::results::{lock_folder, rfc3339, unix_now, write_atomic, ResultsError};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// The schema named in `folder.json`.
pub const SCHEMA: &str = "alloclab.folder/1";
/// The status file of every results folder.
pub const STATUS_FILE: &str = "folder.json";

/// What a folder holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// `alloclab run` (and `report`): an experiment's cells.
    Run,
    /// `alloclab exec`: one command under several allocators.
    Exec,
    /// `alloclab sweep`: one command over sizes.
    Sweep,
    /// `alloclab trace`: one cell's timeline and call stacks under several allocators.
    Trace,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Exec => "exec",
            Kind::Sweep => "sweep",
            Kind::Trace => "trace",
        }
    }

    /// The file or folder that marks this kind in folders written before `folder.json`.
    fn marker(self) -> &'static str {
        match self {
            Kind::Run => "plan.json",
            Kind::Exec => "exec.json",
            Kind::Sweep => "sweep.json",
            Kind::Trace => "trace.json",
        }
    }

    /// The lab's own files of this kind: removed before a fresh measurement. Folders
    /// are given with the file endings the lab writes into them.
    fn owned(
        self,
    ) -> (
        &'static [&'static str],
        &'static [(&'static str, &'static str)],
    ) {
        match self {
            Kind::Run => (
                &[
                    "summary.csv",
                    "env.json",
                    "REPORT.md",
                    "report.html",
                    STATUS_FILE,
                    "plan.json",
                    "calibration.json",
                    "cliffs.json",
                ],
                &[
                    ("runs", ".json"),
                    ("histograms", ".us.csv"),
                    ("histograms", ".us.hgrm"),
                    ("plots", ".svg"),
                ],
            ),
            Kind::Exec => (
                &[
                    "summary.csv",
                    "env.json",
                    "REPORT.md",
                    "report.html",
                    STATUS_FILE,
                    "exec.json",
                ],
                &[("histograms", ".us.csv"), ("histograms", ".us.hgrm")],
            ),
            Kind::Sweep => (
                &[
                    "summary.csv",
                    "env.json",
                    "REPORT.md",
                    "report.html",
                    STATUS_FILE,
                    "sweep.json",
                    "cliffs.json",
                ],
                &[
                    ("points", ".json"),
                    ("histograms", ".us.csv"),
                    ("histograms", ".us.hgrm"),
                    ("plots", ".svg"),
                ],
            ),
            Kind::Trace => (
                &[
                    "env.json",
                    "REPORT.md",
                    "report.html",
                    STATUS_FILE,
                    "trace.json",
                ],
                &[
                    ("timeline", ".csv"),
                    ("runs", ".json"),
                    ("stacks", ".folded"),
                    ("flamegraphs", ".svg"),
                    ("plots", ".svg"),
                    ("perf", ".data"),
                ],
            ),
        }
    }
}

/// `folder.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Status {
    pub schema: String,
    pub kind: Kind,
    /// True only when the whole plan finished.
    pub complete: bool,
    pub started: String,
    pub finished: Option<String>,
    pub command_line: Vec<String>,
}

/// What kind of results `dir` holds, if any: from its `folder.json`, else from the
/// files the kind writes.
pub fn kind_of(dir: &Path) -> Result<Option<Kind>, ResultsError> {
    if let Some(s) = status(dir)? {
        return Ok(Some(s.kind));
    }
    Ok([Kind::Run, Kind::Exec, Kind::Sweep, Kind::Trace]
        .into_iter()
        .find(|k| dir.join(k.marker()).exists() || (*k == Kind::Run && dir.join("runs").is_dir())))
}

/// `dir/folder.json`, if there is one.
pub fn status(dir: &Path) -> Result<Option<Status>, ResultsError> {
    let path = dir.join(STATUS_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ResultsError::Io { path, source }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ResultsError::Invalid {
            path,
            why: format!("{e}; expected the status file alloclab writes ({SCHEMA})"),
        })
}

/// An open, locked results folder of one kind.
pub struct Folder {
    pub root: PathBuf,
    status: Status,
    /// Held open for the lock's lifetime.
    _lock: File,
}

impl Folder {
    /// Opens `root` for results of `kind`: created if missing, refused when it holds
    /// another kind's results or another alloclab is writing it. Nothing in it changes
    /// until [`Folder::start`] (so that a command refused after opening some of its
    /// folders has changed none).
    pub fn open(root: &Path, kind: Kind) -> Result<Folder, ResultsError> {
        fs::create_dir_all(root).map_err(|source| ResultsError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        let lock = lock_folder(root)?;
        if let Some(other) = kind_of(root)?.filter(|k| *k != kind) {
            return Err(ResultsError::OtherKind {
                dir: root.to_path_buf(),
                by: other.name(),
                marker: other.marker(),
            });
        }
        let status = match status(root)? {
            Some(s) => s,
            None => Status {
                schema: SCHEMA.into(),
                kind,
                complete: false,
                started: rfc3339(unix_now()),
                finished: None,
                command_line: crate::counters::envinfo::command_line(),
            },
        };
        Ok(Folder {
            root: root.to_path_buf(),
            status,
            _lock: lock,
        })
    }

    /// Starts writing a measurement: with `fresh`, what an earlier measurement of this
    /// kind left is removed first (without, as for `run --resume`, it stays); either way
    /// `folder.json` says `complete: false` until [`Folder::finish`].
    pub fn start(&mut self, fresh: bool) -> Result<(), ResultsError> {
        if fresh {
            self.clear(self.status.kind)?;
            self.status.started = rfc3339(unix_now());
        }
        self.status.command_line = crate::counters::envinfo::command_line();
        self.finish(false)
    }

    /// Removes the lab's own files of `kind` (never anything else the folder holds).
    fn clear(&self, kind: Kind) -> Result<(), ResultsError> {
        let (files, dirs) = kind.owned();
        let remove = |path: PathBuf| match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(ResultsError::Io { path, source: e })
            }
            _ => Ok(()),
        };
        for f in files {
            remove(self.root.join(f))?;
        }
        for (dir, ending) in dirs {
            let Ok(entries) = fs::read_dir(self.root.join(dir)) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().ends_with(ending) {
                    remove(e.path())?;
                }
            }
        }
        Ok(())
    }

    fn save_status(&self) -> Result<(), ResultsError> {
        self.json(STATUS_FILE, &self.status)
    }

    /// Says whether the plan finished: `complete` true only when it did.
    pub fn finish(&mut self, complete: bool) -> Result<(), ResultsError> {
        self.status.complete = complete;
        self.status.finished = complete.then(|| rfc3339(unix_now()));
        self.save_status()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes `rel` (a path inside the folder) atomically.
    pub fn text(&self, rel: &str, text: &str) -> Result<(), ResultsError> {
        write_atomic(&self.path(rel), text.as_bytes())
    }

    /// Writes `value` as pretty JSON to `rel`, atomically.
    pub fn json<T: Serialize + ?Sized>(&self, rel: &str, value: &T) -> Result<(), ResultsError> {
        let text = serde_json::to_string_pretty(value).map_err(|e| ResultsError::Invalid {
            path: self.path(rel),
            why: e.to_string(),
        })? + "\n";
        self.text(rel, &text)
    }

    /// Writes `histograms/<stem>.us.csv` and `.us.hgrm` from a histogram in ns.
    pub fn histogram(
        &self,
        stem: &str,
        h: &hdrhistogram::Histogram<u64>,
    ) -> Result<(), ResultsError> {
        super::results::write_histogram_files(&self.root, stem, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_measurement_removes_the_last_ones_files_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        {
            let mut f = Folder::open(root, Kind::Sweep).unwrap();
            f.start(true).unwrap();
            f.text("points/n1000.json", "{}").unwrap();
            f.text("REPORT.md", "old").unwrap();
            f.finish(true).unwrap();
        }
        fs::write(root.join("notes.txt"), "mine").unwrap();
        fs::write(root.join("points/mine.txt"), "mine").unwrap();
        assert!(status(root).unwrap().unwrap().complete);
        let mut f = Folder::open(root, Kind::Sweep).unwrap();
        // Opening changes nothing; starting a fresh measurement does.
        assert!(root.join("points/n1000.json").exists());
        f.start(true).unwrap();
        assert!(!root.join("points/n1000.json").exists());
        assert!(!root.join("REPORT.md").exists());
        assert!(root.join("notes.txt").exists() && root.join("points/mine.txt").exists());
        let s = status(root).unwrap().unwrap();
        assert!(!s.complete && s.finished.is_none(), "{s:?}");
    }

    #[test]
    fn another_kinds_folder_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        Folder::open(root, Kind::Exec).unwrap().start(true).unwrap();
        fs::write(root.join("exec.json"), "{}").unwrap();
        let e = Folder::open(root, Kind::Run).err().unwrap().to_string();
        assert!(e.contains("alloclab exec"), "{e}");
        assert!(root.join("exec.json").exists());
        // A folder written before folder.json: known by its files.
        let old = tempfile::tempdir().unwrap();
        fs::create_dir(old.path().join("runs")).unwrap();
        let e = Folder::open(old.path(), Kind::Sweep)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("alloclab run"), "{e}");
    }

    #[test]
    fn a_second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Folder::open(dir.path(), Kind::Run).unwrap();
        let e = Folder::open(dir.path(), Kind::Run)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
    }
}
