//! The one writer of every results folder the lab makes: `run`, `exec`, `sweep`, `trace`
//! (both kinds) and `generate`.
//!
//! A folder holds exactly one measurement of one kind and **owns exactly what it wrote**.
//! Opening it creates it, refuses a target that is not a folder, refuses a folder of
//! another kind, refuses a non-empty folder the lab did not make (no `folder.json`: its
//! files would mix with the results; `--force-out` writes into it anyway, removing
//! nothing), and takes its lock (a second writer is refused with the holder's pid). Every
//! file the lab writes is first listed in the folder's manifest (`files` in
//! `folder.json`, and line by line in `.alloclab-files` as it goes, so that a killed run
//! still says what it wrote) and then written atomically (a temporary file and a rename);
//! a fresh measurement removes what the manifest lists, never anything else.
//!
//! ```text
//!     { "schema": "alloclab.folder/2", "kind": "sweep", "complete": false,
//!       "started": "2026-11-23T09:12:01Z", "finished": null, "command_line": [...],
//!       "files": ["REPORT.md", "points/n1000.json", ...] }
//! ```
//!
//! `complete` is false from the moment the folder is opened until the whole plan (every
//! run, size and bisection) is done: a folder of an interrupted, killed or failing
//! measurement says so, as does its REPORT.md.

use crate::counters::unix_now;
use crate::fmt::rfc3339;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The schema named in `folder.json`.
pub const SCHEMA: &str = "alloclab.folder/2";
/// The status file of every results folder.
pub const STATUS_FILE: &str = "folder.json";

/// Every results folder's guide to its files and columns ([`super::guide`]).
pub const GUIDE_FILE: &str = "README.md";

/// How the lab's guide opens: a README.md that does not is not the lab's.
pub const GUIDE_HEAD: &str = "# What this folder holds\n";

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
    /// `alloclab generate`: man pages or shell completions.
    Generate,
    /// `alloclab serve`: a server under several allocators, driven at fixed rates.
    Serve,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Run => "run",
            Kind::Exec => "exec",
            Kind::Sweep => "sweep",
            Kind::Trace => "trace",
            Kind::Generate => "generate",
            Kind::Serve => "serve",
        }
    }

    /// The file or folder that marks this kind in folders written before `folder.json`.
    fn marker(self) -> &'static str {
        match self {
            Kind::Run => "plan.json",
            Kind::Exec => "exec.json",
            Kind::Sweep => "sweep.json",
            Kind::Trace => "trace.json",
            Kind::Generate => STATUS_FILE,
            Kind::Serve => "serve.json",
        }
    }

    /// The files this kind wrote before folders had a manifest (`alloclab.folder/1`):
    /// removed before a fresh measurement in such a folder only. Folders are given with
    /// the file endings the lab wrote into them. (Files that came after the manifest,
    /// such as `histograms/*.ns.hlog`, are not here: no such folder holds one of the
    /// lab's, and the manifest lists those of later folders.)
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
                    ("evidence", ".json"),
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
                    "untraced.json",
                ],
                &[
                    ("timeline", ".csv"),
                    ("events", ".csv"),
                    ("runs", ".json"),
                    ("stacks", ".folded"),
                    ("flamegraphs", ".svg"),
                    ("plots", ".svg"),
                    ("perf", ".data"),
                ],
            ),
            Kind::Generate | Kind::Serve => (&[], &[]),
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
    /// The manifest: every file of this measurement, relative to the folder. `None` in
    /// folders written before the manifest (`alloclab.folder/1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// Where the plan did not finish: what of it has no result, in words ("6 of the 144
    /// planned worker processes", "the confirmation of 2 cliffs' thresholds"), so that
    /// every page built from the folder later can name it. Empty when complete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
}

/// The manifest's journal: one line per file, appended before the file is written.
pub const JOURNAL: &str = ".alloclab-files";
/// The lock file of every results folder.
const LOCK: &str = ".lock";

/// Whether a folder the lab did not make may be written into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// New, empty, or the lab's own folder of this kind (the default).
    Own,
    /// `--force-out`: also a non-empty folder without `folder.json`; nothing in it is
    /// removed, files the lab writes replace same-named ones.
    Force,
    /// An existing results folder of this kind, to be rebuilt (`alloclab report`):
    /// `folder.json` or, for folders written before it, the kind's marker file.
    Existing,
}

/// What kind of results `dir` holds, if any: from its `folder.json`, else from the
/// files the kind writes.
pub fn kind_of(dir: &Path) -> Result<Option<Kind>, ResultsError> {
    if let Some(s) = status(dir)? {
        return Ok(Some(s.kind));
    }
    Ok(legacy_kind(dir))
}

/// The kind of a folder written before `folder.json`, by its marker files.
fn legacy_kind(dir: &Path) -> Option<Kind> {
    [Kind::Run, Kind::Exec, Kind::Sweep, Kind::Trace]
        .into_iter()
        .find(|k| dir.join(k.marker()).exists() || (*k == Kind::Run && dir.join("runs").is_dir()))
}

/// `dir/folder.json`, if there is one.
pub fn status(dir: &Path) -> Result<Option<Status>, ResultsError> {
    let path = dir.join(STATUS_FILE);
    let text = match read_limited(&path, 64 << 20) {
        Ok(t) => t,
        Err(ResultsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ResultsError::Invalid {
            path,
            why: format!("{e}; expected the status file alloclab writes ({SCHEMA})"),
        })
}

/// Writes `contents` to `path` through a temporary file in the same folder and a rename,
/// so that `path` is either the old file or the whole new one, never half of one.
///
/// Only a regular file is ever replaced: a device, FIFO, socket, folder or symbolic link
/// at `path` is refused, never replaced by a file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), ResultsError> {
    if let Ok(m) = fs::symlink_metadata(path) {
        if !m.is_file() {
            return Err(ResultsError::Invalid {
                path: path.to_path_buf(),
                why: format!(
                    "is a {}, not a regular file; alloclab replaces only regular files",
                    kind_of_path(&m)
                ),
            });
        }
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|source| ResultsError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    // The temporary file is created new (never an existing file, never through a
    // symbolic link someone put at its name), under a name not known in advance.
    let (tmp, mut file) = create_temporary(dir, name).map_err(|source| ResultsError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let result = (|| {
        file.write_all(contents)?;
        file.sync_all()?;
        // rename replaces a file or a symbolic link put at `path` meanwhile, never
        // what such a link points to.
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The file a temporary of [`create_temporary`]'s is for: `NAME` of `.NAME.tmp.PID.N`.
fn temporary_of(name: &str) -> &str {
    let rest = name.strip_prefix('.').unwrap_or(name);
    let mut parts = rest.rsplitn(3, '.');
    let _ = (parts.next(), parts.next());
    parts
        .next()
        .and_then(|h| h.strip_suffix(".tmp"))
        .unwrap_or(rest)
}

/// Whether `name` is one of [`create_temporary`]'s: `.NAME.tmp.PID.N`, N in hex.
fn is_temporary(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    let mut parts = rest.rsplitn(3, '.');
    let (Some(nonce), Some(pid), Some(head)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    head.strip_suffix(".tmp").is_some_and(|n| !n.is_empty())
        && !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !nonce.is_empty()
        && nonce.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `dir/.NAME.tmp.PID.N`, created exclusively (O_EXCL, O_NOFOLLOW) with N from a
/// per-process counter and the clock; another name is tried if one is taken.
fn create_temporary(dir: &Path, name: &str) -> std::io::Result<(PathBuf, File)> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..16 {
        let nonce = COUNTER.fetch_add(1, Ordering::Relaxed)
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos() as u64)
                .rotate_left(20);
        let tmp = dir.join(format!(".{name}.tmp.{}.{nonce:x}", std::process::id()));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name was free")))
}

/// Takes `dir/.lock` for this process (the one lock of every results folder, `run`'s and
/// `exec`'s): a second alloclab writing the same folder is refused with the holder's pid.
/// The lock lasts as long as the returned file is open.
pub fn lock_folder(dir: &Path) -> Result<File, ResultsError> {
    let lock_path = dir.join(".lock");
    use std::os::unix::fs::OpenOptionsExt;
    let mut lock = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock_path)
        .map_err(|source| ResultsError::NotWritable {
            dir: dir.to_path_buf(),
            source,
        })?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = lock.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => "another process".to_string(),
                pid => format!("pid {pid}"),
            };
            return Err(ResultsError::Locked {
                dir: dir.to_path_buf(),
                holder,
            });
        }
        Err(fs::TryLockError::Error(source)) => {
            return Err(ResultsError::Io {
                path: lock_path,
                source,
            })
        }
    }
    let _ = lock.set_len(0);
    let _ = writeln!(lock, "{}", std::process::id());
    Ok(lock)
}

/// Who is writing `dir` now, if anyone: "pid N" of the alloclab that holds its lock
/// (None: no writer; the folder is not locked or has no lock file). Reads only.
pub fn writer_of(dir: &Path) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut lock = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(LOCK))
        .ok()?;
    match lock.try_lock_shared() {
        Err(fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = lock.read_to_string(&mut holder);
            Some(match holder.trim() {
                "" => "another process".to_string(),
                pid => format!("pid {pid}"),
            })
        }
        _ => None,
    }
}

/// What a path is, in words, for a refusal: "a symbolic link", "a character device" …
pub fn kind_of_path(m: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_symlink() {
        "symbolic link"
    } else if t.is_dir() {
        "folder"
    } else if t.is_file() {
        "regular file"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_fifo() {
        "FIFO (named pipe)"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// The names in `dir` that are not the lab's own bookkeeping (lock, journal, temporary
/// files of an interrupted write), sorted.
fn foreign_entries(dir: &Path) -> Result<Vec<String>, ResultsError> {
    let entries = fs::read_dir(dir).map_err(|source| ResultsError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != LOCK && n != JOURNAL && !(n.starts_with('.') && n.contains(".tmp.")))
        .collect();
    names.sort();
    Ok(names)
}

/// How the lab's index.html begins: only a file that begins so is the lab's (and may
/// be replaced by it).
pub const INDEX_HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" content=\"alloclab index\">";

/// Writes `index.html` into `parent`, a folder that holds results folders (not one
/// itself): only where there is no index.html yet or the one there is the lab's (it
/// begins with [`INDEX_HEAD`]); a user's own index.html, or anything
/// that is not a regular file, is refused and left as it is. Atomic, as every file of
/// the lab. (A file put in its place between the check and the rename is replaced: the
/// check cannot lock a folder the lab does not own.)
pub fn write_index(parent: &Path, html: &str) -> Result<PathBuf, String> {
    check_folder_target(parent).map_err(|e| e.to_string())?;
    if !parent.is_dir() {
        return Err(format!("{} is not a folder", parent.display()));
    }
    if let Some(kind) = kind_of(parent).map_err(|e| e.to_string())? {
        return Err(format!(
            "{} is a results folder of `alloclab {}`, not a folder of results folders; give the folder that holds them (e.g. results/)",
            parent.display(),
            kind.name()
        ));
    }
    let path = parent.join("index.html");
    match fs::symlink_metadata(&path) {
        Ok(m) if !m.is_file() => {
            return Err(format!(
                "{} is a {}, not a regular file; alloclab replaces only its own index.html",
                path.display(),
                kind_of_path(&m)
            ))
        }
        Ok(_) => {
            let text = read_limited(&path, 64 << 20).map_err(|e| e.to_string())?;
            if !text.starts_with(INDEX_HEAD) {
                return Err(format!(
                    "{} is not alloclab's (it does not begin as the lab's index does); alloclab does not replace it: move it, or write the results somewhere else",
                    path.display()
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    // What a killed earlier write of this index left (`.index.html.tmp.PID.N`), where
    // its writer is gone; the parent is not locked, so a live writer's is left alone.
    if let Ok(entries) = fs::read_dir(parent) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix(".index.html.tmp.")
                .and_then(|rest| rest.split('.').next())
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
            let gone = unsafe { libc::kill(pid, 0) } == -1
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            if is_temporary(&name) && gone && e.file_type().is_ok_and(|t| t.is_file()) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    write_atomic(&path, html.as_bytes()).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path)
}

/// Checks a path the lab is to write as a results folder, before anything runs: a
/// folder (or a symbolic link to one) or nothing yet.
pub fn check_folder_target(root: &Path) -> Result<(), ResultsError> {
    match fs::symlink_metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) if m.file_type().is_symlink() && root.is_dir() => Ok(()),
        Ok(m) => Err(ResultsError::NotAFolder {
            path: root.to_path_buf(),
            what: if m.file_type().is_symlink() {
                "symbolic link to no folder"
            } else {
                kind_of_path(&m)
            },
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Err(ResultsError::NotAFolder {
            path: root.to_path_buf(),
            what: "path below a file or device",
        }),
        Err(source) => Err(ResultsError::Io {
            path: root.to_path_buf(),
            source,
        }),
    }
}

/// Checks a single file the lab is to write outside a results folder (`compare --html`),
/// before anything runs: a regular file or nothing yet (never a device, FIFO, socket,
/// folder or symbolic link), in an existing folder the lab may write into and that is
/// not another command's results folder.
pub fn check_file_target(path: &Path) -> Result<(), String> {
    let shown = path.display();
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(m) if m.is_dir() => {
            return Err(format!(
                "{shown} is a folder; give a file to write, e.g. {}",
                path.join("compare.html").display()
            ))
        }
        Ok(m) => {
            return Err(format!(
                "{shown} is a {}, not a regular file; alloclab replaces only regular files (give a new file name, e.g. compare.html)",
                kind_of_path(&m)
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{shown}: {e}")),
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "{shown}: the folder {} does not exist; create it first or give a file in an existing folder",
            dir.display()
        ));
    }
    if let Some((k, at)) = enclosing_results(dir, true) {
        return Err(format!(
            "{shown} is inside a results folder of `alloclab {}` ({}), whose files are that measurement's; give a file outside it",
            k.name(),
            at.display()
        ));
    }
    // May we write there? A probe file, created and removed at once.
    let probe = dir.join(format!(".alloclab-probe.tmp.{}", std::process::id()));
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!("cannot write into {}: {e}", dir.display())),
    }
}

/// The results folder of the lab's (one with its folder.json; with `itself`, or one
/// known by an earlier version's marker files) that `dir` is or lies inside, with its
/// kind: `dir` itself when `itself`, and every folder above it.
fn enclosing_results(dir: &Path, itself: bool) -> Option<(Kind, PathBuf)> {
    // The nearest folder that exists, as an absolute path.
    let mut existing = dir.to_path_buf();
    while !existing.is_dir() {
        existing = existing.parent()?.to_path_buf();
        if existing.as_os_str().is_empty() {
            existing = PathBuf::from(".");
        }
    }
    let existing = fs::canonicalize(&existing).ok()?;
    let skip = usize::from(!itself && existing == fs::canonicalize(dir).unwrap_or_default());
    existing.ancestors().skip(skip).find_map(|d| {
        let by_status = status(d).ok().flatten().map(|s| s.kind);
        let by_marker = (itself && d == existing).then(|| legacy_kind(d)).flatten();
        by_status.or(by_marker).map(|k| (k, d.to_path_buf()))
    })
}

/// A path inside a results folder as the manifest keeps it: relative, with no `.`, `..`
/// or empty components, and not one of the lab's bookkeeping files.
fn checked_rel(rel: &str) -> Option<&str> {
    let ok = !rel.is_empty()
        && !rel.starts_with('/')
        && rel
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
        && ![LOCK, JOURNAL, STATUS_FILE].contains(&rel);
    ok.then_some(rel)
}

/// The files of this measurement: the set, and the journal they are appended to.
struct Manifest {
    files: BTreeSet<String>,
    journal: Option<File>,
}

/// An open, locked results folder of one kind.
pub struct Folder {
    pub root: PathBuf,
    status: Status,
    /// Whether the folder was the lab's before this measurement opened it (it had a
    /// folder.json): only then are its hidden temporary files the lab's to remove.
    was_ours: bool,
    manifest: Mutex<Manifest>,
    /// Whether this measurement's guide (README.md) has been written yet.
    guide_started: std::sync::atomic::AtomicBool,
    /// Held open for the lock's lifetime.
    _lock: File,
}

impl Folder {
    /// Opens `root` for results of `kind`: created if missing; refused when it is not a
    /// folder, holds another kind's results, is a non-empty folder the lab did not make
    /// (unless `claim` says otherwise), cannot be written, or another alloclab is writing
    /// it. Nothing in it changes until [`Folder::start`] (so that a command refused after
    /// opening some of its folders has changed none).
    pub fn open(root: &Path, kind: Kind, claim: Claim) -> Result<Folder, ResultsError> {
        check_folder_target(root)?;
        // Not inside another results folder (whose manifest does not know this one).
        if let Some((other, at)) = enclosing_results(root, false) {
            return Err(ResultsError::Inside {
                dir: root.to_path_buf(),
                by: other.name(),
                at,
            });
        }
        let existed = root.is_dir();
        let on_disk = if existed { status(root)? } else { None };
        if existed && on_disk.is_none() {
            let legacy = legacy_kind(root);
            match claim {
                Claim::Existing if legacy == Some(kind) => {}
                Claim::Existing => {
                    return Err(ResultsError::NotResults {
                        dir: root.to_path_buf(),
                        kind: kind.name(),
                    })
                }
                Claim::Own => {
                    if let Some(other) = legacy.filter(|k| *k != kind) {
                        return Err(ResultsError::OtherKind {
                            dir: root.to_path_buf(),
                            by: other.name(),
                            marker: other.marker(),
                        });
                    }
                    let names = foreign_entries(root)?;
                    // `make man` before generate had a folder.json: only pages and
                    // completions in it, which a new generate replaces.
                    let earlier_pages =
                        kind == Kind::Generate && names.iter().all(|n| generated_name(n));
                    if !names.is_empty() && !earlier_pages {
                        return Err(ResultsError::NotOurs {
                            dir: root.to_path_buf(),
                            sample: sample(&names),
                        });
                    }
                }
                Claim::Force => {}
            }
        }
        fs::create_dir_all(root).map_err(|source| ResultsError::NotWritable {
            dir: root.to_path_buf(),
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
        let legacy_pages = kind == Kind::Generate
            && on_disk.is_none()
            && existed
            && foreign_entries(root)?.iter().all(|n| generated_name(n));
        let was_ours = on_disk.is_some();
        let status = match on_disk {
            Some(s) => s,
            None => Status {
                schema: SCHEMA.into(),
                kind,
                complete: false,
                started: rfc3339(unix_now()),
                finished: None,
                command_line: crate::counters::envinfo::command_line(),
                // A folder the lab did not make holds no file of this measurement yet:
                // nothing in it is the lab's to remove — but the pages of an earlier
                // generate, cleaned by their names (legacy_files).
                files: (!legacy_pages).then(Vec::new),
                missing: Vec::new(),
            },
        };
        // Only plain paths inside the folder: a hand-edited folder.json naming
        // "../x" or "/etc/x" names nothing the lab may remove.
        let mut files: BTreeSet<String> = status
            .files
            .iter()
            .flatten()
            .filter_map(|f| checked_rel(f).map(str::to_string))
            .collect();
        files.extend(read_journal(root));
        Ok(Folder {
            root: root.to_path_buf(),
            was_ours,
            status,
            manifest: Mutex::new(Manifest {
                files,
                journal: None,
            }),
            guide_started: std::sync::atomic::AtomicBool::new(false),
            _lock: lock,
        })
    }

    /// The kind of results this folder holds.
    pub fn kind(&self) -> Kind {
        self.status.kind
    }

    /// Starts writing a measurement: with `fresh`, what an earlier measurement of this
    /// kind left is removed first (without, as for `run --resume`, it stays); either way
    /// `folder.json` says `complete: false` until [`Folder::finish`].
    pub fn start(&mut self, fresh: bool) -> Result<(), ResultsError> {
        // Before `clear`: which temporaries are the lab's is known from the manifest,
        // which a fresh start empties (and a folder that held only the lab's files and
        // a temporary of one of them is then empty, and goes with them).
        self.remove_stale_temporaries();
        if fresh {
            self.clear()?;
            self.status.started = rfc3339(unix_now());
        }
        self.status.schema = SCHEMA.into();
        self.status.command_line = crate::counters::envinfo::command_line();
        // Not finished, and nothing written yet to guide a reader to: the guide comes
        // with the first account of how far the measurement got.
        self.status.complete = false;
        self.status.finished = None;
        self.status.missing = Vec::new();
        self.save_status()
    }

    /// Removes what a killed write left: the lab's own temporary files
    /// (`.NAME.tmp.PID.N`, [`create_temporary`]) anywhere in the folder, not through
    /// symbolic links. Safe under the folder's lock: no other writer of it is running,
    /// so every such file is an orphan. Not in a folder the lab did not make
    /// (`--force-out` into a folder without folder.json): nothing there is removed.
    /// Reads the manifest: [`Folder::start`] calls it before a fresh start clears that.
    pub fn remove_stale_temporaries(&self) {
        if !self.was_ours {
            return;
        }
        // Only the temporaries of the lab's own files: `.NAME.tmp.PID.N` beside a NAME
        // the manifest lists (or the folder's own status file).
        let listed: BTreeSet<String> = {
            let m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
            m.files.iter().cloned().collect()
        };
        fn walk(dir: &Path, rel: &str, depth: u32, listed: &BTreeSet<String>) {
            let Ok(entries) = fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let Ok(t) = e.file_type() else {
                    continue;
                };
                let name = e.file_name().to_string_lossy().into_owned();
                if t.is_dir() && depth < 4 {
                    walk(&e.path(), &format!("{rel}{name}/"), depth + 1, listed);
                } else if t.is_file() && is_temporary(&name) {
                    let of = temporary_of(&name);
                    let target = format!("{rel}{of}");
                    if listed.contains(&target) || target == STATUS_FILE {
                        let _ = fs::remove_file(e.path());
                    }
                }
            }
        }
        walk(&self.root, "", 0, &listed);
    }

    /// Removes the files of the earlier measurement: those its manifest lists (and, in a
    /// folder written before the manifest, the files its kind wrote), never anything else.
    fn clear(&mut self) -> Result<(), ResultsError> {
        let mut listed: Vec<PathBuf> = {
            let m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
            m.files.iter().map(|f| self.root.join(f)).collect()
        };
        if self.status.files.is_none() {
            listed.extend(legacy_files(&self.root, self.status.kind));
        }
        let mut parents = BTreeSet::new();
        for path in &listed {
            // Never through a sub-folder that is a symbolic link (or no folder at all).
            if through_a_link(&self.root, path).is_some() {
                continue;
            }
            match fs::symlink_metadata(path) {
                // A folder where the lab wrote a file is not the lab's to remove.
                Ok(m) if m.is_dir() => continue,
                Ok(_) => fs::remove_file(path).map_err(|source| ResultsError::Io {
                    path: path.clone(),
                    source,
                })?,
                Err(_) => continue,
            }
            let mut p = path.parent();
            while let Some(d) = p.filter(|d| *d != self.root) {
                parents.insert(d.to_path_buf());
                p = d.parent();
            }
        }
        // Folders that held only the lab's files go too (deepest first; a folder with
        // anything else in it stays).
        for d in parents.iter().rev() {
            let _ = fs::remove_dir(d);
        }
        let mut m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        m.files.clear();
        m.journal = None;
        let _ = fs::remove_file(self.root.join(JOURNAL));
        self.status.files = Some(Vec::new());
        Ok(())
    }

    /// Lists `rel` in the manifest (and its journal) before it is written.
    fn register(&self, rel: &str) -> Result<PathBuf, ResultsError> {
        let Some(rel) = checked_rel(rel) else {
            return Err(ResultsError::Invalid {
                path: self.root.join(rel),
                why: "not a plain path inside the results folder".into(),
            });
        };
        if let Some(link) = through_a_link(&self.root, &self.root.join(rel)) {
            return Err(ResultsError::Invalid {
                path: link,
                why: "is a symbolic link or not a folder; alloclab writes only into folders of the results folder itself".into(),
            });
        }
        let mut m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        if !m.files.contains(rel) {
            let journal_path = self.root.join(JOURNAL);
            if m.journal.is_none() {
                use std::os::unix::fs::OpenOptionsExt;
                m.journal = Some(
                    fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .custom_flags(libc::O_NOFOLLOW)
                        .open(&journal_path)
                        .map_err(|source| ResultsError::Io {
                            path: journal_path.clone(),
                            source,
                        })?,
                );
            }
            if let Some(j) = m.journal.as_mut() {
                writeln!(j, "{rel}").map_err(|source| ResultsError::Io {
                    path: journal_path,
                    source,
                })?;
            }
            m.files.insert(rel.to_string());
        }
        Ok(self.root.join(rel))
    }

    /// Lists `rel` in the manifest and gives its path, for a file another program
    /// writes there (perf's data).
    pub fn claim(&self, rel: &str) -> Result<PathBuf, ResultsError> {
        let path = self.register(rel)?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|source| ResultsError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        Ok(path)
    }

    /// Lists `rel` in the manifest for a file another program writes there (perf's data)
    /// and removes any stale one first (perf would rename it to `.old`); the file goes
    /// when the returned guard is dropped — after it was read, after a failure, after
    /// Ctrl-C or SIGTERM, on every way out the lab controls — unless `keep`.
    pub fn claim_for_writer(&self, rel: &str, keep: bool) -> Result<Claimed<'_>, ResultsError> {
        let path = self.claim(rel)?;
        for stale in [path.clone(), path.with_extension("data.old")] {
            match fs::remove_file(&stale) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(ResultsError::Io {
                        path: stale,
                        source: e,
                    })
                }
                _ => {}
            }
        }
        Ok(Claimed {
            folder: self,
            rel: rel.to_string(),
            path,
            keep,
        })
    }

    /// Whether this measurement wrote (or claimed) `rel`.
    pub fn holds(&self, rel: &str) -> bool {
        let m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        m.files.contains(rel)
    }

    /// The files of this measurement under `dir/` (relative to the folder).
    pub fn listed_under(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        m.files
            .iter()
            .filter(|f| f.starts_with(&prefix))
            .cloned()
            .collect()
    }

    /// Removes a file this measurement wrote (only such a file: anything else is left).
    pub fn remove(&self, rel: &str) -> Result<(), ResultsError> {
        let mut m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
        if !m.files.remove(rel) {
            return Ok(());
        }
        let path = self.root.join(rel);
        if through_a_link(&self.root, &path).is_some() {
            return Ok(());
        }
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(ResultsError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }

    fn save_status(&mut self) -> Result<(), ResultsError> {
        // The files of this measurement that are there (perf's data, say, is claimed and
        // then removed by its own guard).
        let files: Vec<String> = {
            let m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
            m.files
                .iter()
                .filter(|f| fs::symlink_metadata(self.root.join(f)).is_ok())
                .cloned()
                .collect()
        };
        self.status.files = Some(files);
        let text =
            serde_json::to_string_pretty(&self.status).map_err(|e| ResultsError::Invalid {
                path: self.path(STATUS_FILE),
                why: e.to_string(),
            })? + "\n";
        write_atomic(&self.path(STATUS_FILE), text.as_bytes())
    }

    /// Says whether the plan finished: `complete` true only when it did.
    pub fn finish(&mut self, complete: bool) -> Result<(), ResultsError> {
        self.finish_with(complete, Vec::new())
    }

    /// [`Folder::finish`], naming what of the plan has no result where it did not
    /// finish (`missing`, kept in folder.json for the pages built from it later).
    pub fn finish_with(
        &mut self,
        complete: bool,
        missing: Vec<String>,
    ) -> Result<(), ResultsError> {
        self.status.complete = complete;
        self.status.finished = complete.then(|| rfc3339(unix_now()));
        self.status.missing = if complete { Vec::new() } else { missing };
        self.write_guide()?;
        self.save_status()
    }

    /// Writes [`GUIDE_FILE`], the folder's guide to its files and columns, from the
    /// manifest — unless a file of that name is there that this measurement did not
    /// write (a person's own, in a folder given with `--force-out`): that one is left.
    fn write_guide(&self) -> Result<(), ResultsError> {
        self.guide_started
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let path = self.path(GUIDE_FILE);
        // Only over the lab's own guide: a file a person wrote there (or put under that
        // name as a link, a folder, anything but a file that opens as the guide does)
        // stays, and is not this measurement's.
        let ours = match fs::symlink_metadata(&path) {
            Err(_) => true,
            Ok(m) if m.file_type().is_file() => {
                let mut head = vec![0u8; GUIDE_HEAD.len()];
                crate::files::open(&path)
                    .and_then(|mut f| f.read_exact(&mut head))
                    .is_ok_and(|()| head == GUIDE_HEAD.as_bytes())
            }
            Ok(_) => false,
        };
        if !ours {
            let mut m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
            m.files.remove(GUIDE_FILE);
            return Ok(());
        }
        let mut files: Vec<String> = {
            let m = self.manifest.lock().unwrap_or_else(|e| e.into_inner());
            m.files.iter().cloned().collect()
        };
        files.push(STATUS_FILE.into());
        files.sort();
        files.dedup();
        // The first line of a CSV file of this measurement (its columns).
        let header = |rel: &str| -> Option<String> {
            let p = self.root.join(rel);
            if !fs::symlink_metadata(&p).ok()?.file_type().is_file() {
                return None;
            }
            let mut text = String::new();
            crate::files::open(&p)
                .ok()?
                .take(64 * 1024)
                .read_to_string(&mut text)
                .ok()?;
            text.lines().next().map(str::to_string)
        };
        match super::guide::readme(self.status.kind.name(), &files, &header) {
            Some(text) => self.bytes(GUIDE_FILE, text.as_bytes()),
            None => Ok(()),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes `rel` (a path inside the folder) atomically, listed in the manifest first.
    pub fn text(&self, rel: &str, text: &str) -> Result<(), ResultsError> {
        self.bytes(rel, text.as_bytes())
    }

    /// Writes `rel` (a path inside the folder) atomically, listed in the manifest first.
    pub fn bytes(&self, rel: &str, bytes: &[u8]) -> Result<(), ResultsError> {
        let path = self.register(rel)?;
        write_atomic(&path, bytes)?;
        // With the measurement's first file, its guide (rewritten as the folder says how
        // far it got): a measurement killed before that still has one.
        if !self
            .guide_started
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.write_guide()?;
        }
        Ok(())
    }

    /// Writes `value` as pretty JSON to `rel`, atomically.
    pub fn json<T: Serialize + ?Sized>(&self, rel: &str, value: &T) -> Result<(), ResultsError> {
        let text = serde_json::to_string_pretty(value).map_err(|e| ResultsError::Invalid {
            path: self.path(rel),
            why: e.to_string(),
        })? + "\n";
        self.text(rel, &text)
    }

    /// Writes `histograms/<stem>.us.csv` and `.us.hgrm` from a histogram in ns (all the
    /// processes or runs of `stem`, merged), and `histograms/<stem>.ns.hlog`, the interval
    /// log of each one's own histogram at its time, with this measurement's start as its
    /// BaseTime.
    pub fn histogram(
        &self,
        stem: &str,
        h: &hdrhistogram::Histogram<u64>,
        log: &super::hlog::IntervalLog,
    ) -> Result<(), ResultsError> {
        self.text(
            &format!("histograms/{stem}.us.csv"),
            &super::hdr::csv(h, HISTOGRAM_SCALING),
        )?;
        self.text(
            &format!("histograms/{stem}.us.hgrm"),
            &super::hdr::text(h, HISTOGRAM_SCALING),
        )?;
        self.text(
            &format!("histograms/{stem}.ns.hlog"),
            &super::hlog::text(log, self.started_unix_ns()),
        )
    }

    /// When this measurement began (`started` in folder.json, whole seconds), in ns since
    /// the Unix epoch; now if that does not parse.
    fn started_unix_ns(&self) -> u64 {
        humantime::parse_rfc3339(&self.status.started)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as u64)
            .or_else(crate::counters::unix_now_ns)
            .unwrap_or(0)
    }
}

/// A file of the folder that another program writes ([`Folder::claim_for_writer`]).
pub struct Claimed<'a> {
    folder: &'a Folder,
    rel: String,
    path: PathBuf,
    keep: bool,
}

impl Claimed<'_> {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Claimed<'_> {
    fn drop(&mut self) {
        if !self.keep {
            let _ = self.folder.remove(&self.rel);
            let _ = fs::remove_file(self.path.with_extension("data.old"));
            // Its sub-folder goes when nothing else is in it.
            if let Some(dir) = self.path.parent().filter(|d| *d != self.folder.root) {
                let _ = fs::remove_dir(dir);
            }
        }
    }
}

/// The first folder between `root` and `path` (exclusive of both ends) that exists and
/// is not a plain folder — a symbolic link, say, through which a write or a removal
/// would reach outside the results folder.
fn through_a_link(root: &Path, path: &Path) -> Option<PathBuf> {
    let rel = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for c in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Some(at),
            Err(_) => return None,
        }
    }
    None
}

/// The first few names of a folder's entries, for a refusal.
fn sample(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(3).map(String::as_str).collect();
    match names.len() {
        n if n > 3 => format!("{} and {} more", shown.join(", "), n - 3),
        _ => shown.join(", "),
    }
}

/// The journal's lines: files a measurement listed before it wrote them.
fn read_journal(root: &Path) -> Vec<String> {
    crate::files::read_to_string(root.join(JOURNAL))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| checked_rel(l.trim()).map(str::to_string))
        .collect()
}

/// Whether `name` is one that `alloclab generate` writes: a man page (`alloclab*.1`) or
/// a completion script.
fn generated_name(name: &str) -> bool {
    (name.starts_with("alloclab") && name.ends_with(".1"))
        || [
            "alloclab.bash",
            "_alloclab",
            "alloclab.fish",
            "alloclab.elv",
            "_alloclab.ps1",
        ]
        .contains(&name)
}

/// The files a kind wrote in a folder of `alloclab.folder/1` (before the manifest): its
/// fixed names, and the files with the kind's endings in its sub-folders.
fn legacy_files(root: &Path, kind: Kind) -> Vec<PathBuf> {
    if kind == Kind::Generate {
        return foreign_entries(root)
            .unwrap_or_default()
            .into_iter()
            .filter(|n| generated_name(n))
            .map(|n| root.join(n))
            .collect();
    }
    let (files, dirs) = kind.owned();
    let mut out: Vec<PathBuf> = files.iter().map(|f| root.join(f)).collect();
    for (dir, ending) in dirs {
        let Ok(entries) = fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().ends_with(ending) {
                out.push(e.path());
            }
        }
    }
    out
}

/// Histogram files hold microseconds: ns values divided by this.
pub const HISTOGRAM_SCALING: f64 = 1000.0;

/// Why a results folder can't be used.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{} is being written by another alloclab run ({holder}); wait for it to finish or choose another --out", .dir.display())]
    Locked { dir: PathBuf, holder: String },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: {why}", .path.display())]
    Invalid { path: PathBuf, why: String },
    #[error("{} holds results of `alloclab {by}` ({marker}); give this command a folder of its own", .dir.display())]
    OtherKind {
        dir: PathBuf,
        by: &'static str,
        marker: &'static str,
    },
    #[error("{} is a {what}, not a folder; give a folder for the results (created if absent)", .path.display())]
    NotAFolder { path: PathBuf, what: &'static str },
    #[error("{} holds files alloclab did not write ({sample}) and no folder.json of alloclab's: the results would mix with them and replace any of the same name. Give a new or empty folder, or add --force-out to write into it anyway (nothing in it is removed; files alloclab writes replace same-named ones)", .dir.display())]
    NotOurs { dir: PathBuf, sample: String },
    #[error("{} is inside a results folder of `alloclab {by}` ({}), whose files are that measurement's; give a folder outside it", .dir.display(), .at.display())]
    Inside {
        dir: PathBuf,
        by: &'static str,
        at: PathBuf,
    },
    #[error("{} is not a results folder of `alloclab {kind}` (no folder.json); give one that command wrote", .dir.display())]
    NotResults { dir: PathBuf, kind: &'static str },
    #[error("cannot write into {}: {source}; give a folder you may write into", .dir.display())]
    NotWritable { dir: PathBuf, source: io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ResultsError + '_ {
    move |source| ResultsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a text file the lab takes as input, refusing what is not a regular file (a
/// device such as /dev/zero, a FIFO) and what is larger than `limit` bytes, without
/// reading more than that.
pub fn read_limited(path: &Path, limit: u64) -> Result<String, ResultsError> {
    let invalid = |why: String| ResultsError::Invalid {
        path: path.to_path_buf(),
        why,
    };
    let too_big = |bytes: u64| {
        invalid(format!(
            "{} MiB, more than the {} MiB alloclab reads from a file",
            crate::fmt::group_thousands((bytes >> 20) as i64),
            limit >> 20
        ))
    };
    // Refused by their kind before they are opened: a FIFO would block, /dev/zero
    // never ends.
    let m = fs::metadata(path).map_err(io_err(path))?;
    if !m.is_file() {
        return Err(invalid(format!(
            "a {}, not a regular file",
            kind_of_path(&m)
        )));
    }
    if m.len() > limit {
        return Err(too_big(m.len()));
    }
    let mut bytes = Vec::new();
    crate::files::open(path)
        .map_err(io_err(path))?
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    if bytes.len() as u64 > limit {
        // It grew while being read.
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        invalid(format!(
            "not text (byte {} is not UTF-8)",
            e.utf8_error().valid_up_to()
        ))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_measurement_removes_the_last_ones_files_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        {
            let mut f = Folder::open(root, Kind::Sweep, Claim::Own).unwrap();
            f.start(true).unwrap();
            f.text("points/n1000.json", "{}").unwrap();
            f.text("REPORT.md", "old").unwrap();
            f.finish(true).unwrap();
        }
        fs::write(root.join("notes.txt"), "mine").unwrap();
        fs::write(root.join("points/mine.txt"), "mine").unwrap();
        assert!(status(root).unwrap().unwrap().complete);
        let mut f = Folder::open(root, Kind::Sweep, Claim::Own).unwrap();
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
    fn histogram_files_are_the_measurements_own_and_a_fresh_one_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut h = crate::model::record::new_histogram();
        h.record(1234).unwrap();
        let log = super::super::hlog::IntervalLog {
            what: "test".into(),
            intervals: vec![super::super::hlog::Interval {
                label: "p1".into(),
                start_unix_ns: crate::counters::unix_now_ns(),
                length_ns: 1_000,
                histogram: h.clone(),
            }],
        };
        let written = ["us.csv", "us.hgrm", "ns.hlog"].map(|e| format!("histograms/c.{e}"));
        for kind in [Kind::Run, Kind::Exec, Kind::Sweep] {
            {
                let mut f = Folder::open(root, kind, Claim::Own).unwrap();
                f.start(true).unwrap();
                f.histogram("c", &h, &log).unwrap();
                f.finish(true).unwrap();
            }
            let listed = status(root).unwrap().unwrap().files.unwrap();
            for w in &written {
                assert!(
                    root.join(w).is_file() && listed.contains(w),
                    "{w}: {listed:?}"
                );
            }
            fs::write(root.join("histograms/mine.ns.hlog"), "mine").unwrap();
            let mut f = Folder::open(root, kind, Claim::Own).unwrap();
            f.start(true).unwrap();
            for w in &written {
                assert!(!root.join(w).exists(), "{w}");
            }
            assert_eq!(
                crate::files::read_to_string(root.join("histograms/mine.ns.hlog")).unwrap(),
                "mine"
            );
            drop(f);
            fs::remove_dir_all(root).unwrap();
        }
    }

    #[test]
    fn another_kinds_folder_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        Folder::open(root, Kind::Exec, Claim::Own)
            .unwrap()
            .start(true)
            .unwrap();
        fs::write(root.join("exec.json"), "{}").unwrap();
        let e = Folder::open(root, Kind::Run, Claim::Own)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("alloclab exec"), "{e}");
        assert!(root.join("exec.json").exists());
        // A folder written before folder.json: known by its files.
        let old = tempfile::tempdir().unwrap();
        fs::create_dir(old.path().join("runs")).unwrap();
        let e = Folder::open(old.path(), Kind::Sweep, Claim::Force)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("alloclab run"), "{e}");
    }

    /// What a write killed between its temporary file and the rename left (SIGKILL) is
    /// removed by the next writer of the folder, and only that: a name that merely
    /// looks alike stays. The writer it belonged to is gone: the lock says so.
    #[test]
    fn the_next_writer_removes_temporary_files_a_killed_write_left() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = Folder::open(dir.path(), Kind::Run, Claim::Own).unwrap();
        f.start(true).unwrap();
        f.text("runs/a.json", "{}").unwrap();
        f.finish(true).unwrap();
        drop(f);
        let stale = [
            dir.path().join("runs/.a.json.tmp.4242.1f3a9"),
            dir.path().join(".folder.json.tmp.17.0"),
        ];
        for p in &stale {
            fs::write(p, "half").unwrap();
        }
        let alike = [
            // The lab's pattern, for a file the lab never wrote.
            dir.path().join("runs/.mine.json.tmp.12.ab"),
            dir.path().join("runs/.notes.tmp"),
            dir.path().join("runs/.x.tmp.12.zz"),
            dir.path().join("runs/x.json.tmp.1.a"),
        ];
        for p in &alike {
            fs::write(p, "mine").unwrap();
        }
        assert!(is_temporary(".REPORT.md.tmp.123.abc"));
        assert!(!is_temporary(".tmp.1.a"));
        // A resumed measurement (start without fresh) as much as a new one.
        let mut f = Folder::open(dir.path(), Kind::Run, Claim::Own).unwrap();
        f.start(false).unwrap();
        for p in &stale {
            assert!(!p.exists(), "{} stays", p.display());
        }
        for p in &alike {
            assert!(p.exists(), "{} went", p.display());
        }
        assert!(dir.path().join("runs/a.json").is_file());
    }

    /// A fresh measurement (a new `run`, `exec`, `run-all`: `start(true)`) removes the
    /// temporaries of the last one's files too, though it clears the manifest that
    /// says which files those were (issue 71).
    #[test]
    fn a_fresh_writer_removes_temporary_files_a_killed_write_left() {
        let dir = tempfile::tempdir().unwrap();
        for kind in [Kind::Run, Kind::Exec] {
            let root = dir.path().join(kind.name());
            let mut f = Folder::open(&root, kind, Claim::Own).unwrap();
            f.start(true).unwrap();
            f.text("x.json", "{}").unwrap();
            f.text("runs/a.json", "{}").unwrap();
            f.finish(true).unwrap();
            drop(f);
            let stale = [
                root.join(".x.json.tmp.999999.0"),
                root.join("runs/.a.json.tmp.4242.1f3a9"),
            ];
            for p in &stale {
                fs::write(p, "half").unwrap();
            }
            let alike = root.join(".mine.json.tmp.12.ab");
            fs::write(&alike, "mine").unwrap();
            let mut f = Folder::open(&root, kind, Claim::Own).unwrap();
            f.start(true).unwrap();
            for p in &stale {
                assert!(!p.exists(), "{} stays", p.display());
            }
            assert!(alike.is_file());
            // The folder held only the lab's file and its temporary: it goes with them.
            assert!(!root.join("runs").exists());
            assert!(!root.join("x.json").exists());
        }
    }

    /// `--force-out` into a folder the lab did not make removes nothing, not even a file
    /// named like the lab's temporary files; the index's leftovers go when the index is
    /// written again, once their writer is gone.
    #[test]
    fn temporaries_are_removed_only_where_they_are_the_labs() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("sub/.data.tmp.2024.cafe");
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(&theirs, "mine").unwrap();
        let mut f = Folder::open(dir.path(), Kind::Run, Claim::Force).unwrap();
        f.start(true).unwrap();
        assert!(theirs.is_file());
        drop(f);
        let parent = tempfile::tempdir().unwrap();
        // pid 0x7fffffff never runs; our own pid does.
        let (gone, live) = (
            parent.path().join(".index.html.tmp.2147483647.1a"),
            parent
                .path()
                .join(format!(".index.html.tmp.{}.2b", std::process::id())),
        );
        fs::write(&gone, "half").unwrap();
        fs::write(&live, "half").unwrap();
        write_index(parent.path(), INDEX_HEAD).unwrap();
        assert!(!gone.exists() && live.exists());
    }

    #[test]
    fn a_second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Folder::open(dir.path(), Kind::Run, Claim::Own).unwrap();
        let e = Folder::open(dir.path(), Kind::Run, Claim::Own)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
    }

    /// The hostile case of issue 33: a folder of the user's own files given as --out.
    fn users_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("notes.txt"), "mine").unwrap();
        fs::create_dir(d.join("plots")).unwrap();
        fs::write(d.join("plots/my.svg"), "keep").unwrap();
        fs::write(d.join("REPORT.md"), "# my notes").unwrap();
        dir
    }

    #[test]
    fn a_folder_of_someone_elses_files_is_refused_and_untouched() {
        let dir = users_folder();
        let d = dir.path();
        for kind in [
            Kind::Trace,
            Kind::Exec,
            Kind::Run,
            Kind::Sweep,
            Kind::Generate,
        ] {
            let e = Folder::open(d, kind, Claim::Own).err().unwrap().to_string();
            assert!(
                e.contains("did not write") && e.contains("--force-out") && e.contains("REPORT.md"),
                "{e}"
            );
        }
        // Not even the lock file was left in it.
        assert!(!d.join(LOCK).exists() && !d.join(STATUS_FILE).exists());
        assert_eq!(
            crate::files::read_to_string(d.join("REPORT.md")).unwrap(),
            "# my notes"
        );
    }

    #[test]
    fn forced_into_someone_elses_folder_nothing_is_removed_and_a_rerun_removes_only_its_own() {
        let dir = users_folder();
        let d = dir.path();
        let mut f = Folder::open(d, Kind::Trace, Claim::Force).unwrap();
        f.start(true).unwrap();
        f.text("plots/timeline.svg", "<svg/>").unwrap();
        f.text("events/system.csv", "x").unwrap();
        f.finish(true).unwrap();
        drop(f);
        assert_eq!(
            crate::files::read_to_string(d.join("plots/my.svg")).unwrap(),
            "keep"
        );
        // Now the folder is the lab's: a second measurement needs no flag, and removes
        // exactly what the first one wrote.
        let mut f = Folder::open(d, Kind::Trace, Claim::Own).unwrap();
        f.start(true).unwrap();
        assert!(!d.join("plots/timeline.svg").exists());
        assert!(!d.join("events/system.csv").exists() && !d.join("events").exists());
        assert!(d.join("plots/my.svg").exists() && d.join("notes.txt").exists());
        assert!(d.join("REPORT.md").exists());
    }

    #[test]
    fn files_of_a_killed_measurement_are_known_from_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        {
            let mut f = Folder::open(d, Kind::Trace, Claim::Own).unwrap();
            f.start(true).unwrap();
            // Written after the last folder.json: as if killed before finish().
            f.text("untraced.json", "{}").unwrap();
            let data = f.claim("perf/system.data").unwrap();
            fs::write(data, "partial").unwrap();
        }
        assert!(status(d).unwrap().unwrap().files.unwrap().is_empty());
        let mut f = Folder::open(d, Kind::Trace, Claim::Own).unwrap();
        f.start(true).unwrap();
        assert!(!d.join("untraced.json").exists());
        assert!(!d.join("perf").exists());
        f.text("trace.json", "{}").unwrap();
        f.finish(true).unwrap();
        // What this measurement wrote, and the folder's guide to it.
        assert_eq!(
            status(d).unwrap().unwrap().files.unwrap(),
            [GUIDE_FILE, "trace.json"]
        );
        let guide = crate::files::read_to_string(d.join(GUIDE_FILE)).unwrap();
        assert!(guide.contains("| `trace.json` |"), "{guide}");
        assert!(!guide.contains("untraced.json"), "{guide}");
    }

    #[test]
    fn a_readme_the_lab_did_not_write_is_left_and_the_labs_guide_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join(GUIDE_FILE), "my notes").unwrap();
        let mut f = Folder::open(d, Kind::Exec, Claim::Force).unwrap();
        f.start(true).unwrap();
        f.text("exec.json", "{}").unwrap();
        f.finish(true).unwrap();
        assert_eq!(
            crate::files::read_to_string(d.join(GUIDE_FILE)).unwrap(),
            "my notes"
        );
        assert!(!f.holds(GUIDE_FILE));
        // In a folder of its own the guide follows what the folder holds.
        let other = tempfile::tempdir().unwrap();
        let d = other.path().join("own");
        let mut f = Folder::open(&d, Kind::Exec, Claim::Own).unwrap();
        f.start(true).unwrap();
        f.text("exec.json", "{}").unwrap();
        f.finish(false).unwrap();
        let first = crate::files::read_to_string(d.join(GUIDE_FILE)).unwrap();
        assert!(first.contains("| `exec.json` |") && !first.contains("summary.csv"));
        f.text("summary.csv", "allocator\n").unwrap();
        f.finish(true).unwrap();
        let second = crate::files::read_to_string(d.join(GUIDE_FILE)).unwrap();
        assert!(second.contains("| `summary.csv` |"), "{second}");
        assert!(second.contains("## Columns of `summary.csv`"), "{second}");
    }

    #[test]
    fn a_guide_a_person_replaced_or_rewrote_is_left_and_the_measurement_still_finishes() {
        let outer = tempfile::tempdir().unwrap();
        let victim = outer.path().join("notes.md");
        fs::write(&victim, "mine").unwrap();
        let d = outer.path().join("r");
        let mut f = Folder::open(&d, Kind::Exec, Claim::Own).unwrap();
        f.start(true).unwrap();
        // The guide comes with the first file, before any finish: a killed measurement
        // has one too.
        f.text("exec.json", "{}").unwrap();
        assert!(crate::files::read_to_string(d.join(GUIDE_FILE))
            .unwrap()
            .starts_with(GUIDE_HEAD));
        // A link in its place: left, not followed, not this measurement's.
        fs::remove_file(d.join(GUIDE_FILE)).unwrap();
        std::os::unix::fs::symlink(&victim, d.join(GUIDE_FILE)).unwrap();
        f.finish(true).unwrap();
        assert_eq!(crate::files::read_to_string(&victim).unwrap(), "mine");
        assert!(fs::symlink_metadata(d.join(GUIDE_FILE))
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(!status(&d)
            .unwrap()
            .unwrap()
            .files
            .unwrap()
            .contains(&GUIDE_FILE.to_string()));
        // A guide a person rewrote: left as they wrote it.
        fs::remove_file(d.join(GUIDE_FILE)).unwrap();
        fs::write(d.join(GUIDE_FILE), "# My notes on this run\n").unwrap();
        f.finish(true).unwrap();
        assert_eq!(
            crate::files::read_to_string(d.join(GUIDE_FILE)).unwrap(),
            "# My notes on this run\n"
        );
    }

    #[test]
    fn a_file_a_user_adds_to_a_lab_folder_under_a_lab_name_survives() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut f = Folder::open(d, Kind::Run, Claim::Own).unwrap();
        f.start(true).unwrap();
        f.text("plots/p50.svg", "<svg/>").unwrap();
        f.finish(true).unwrap();
        drop(f);
        fs::write(d.join("plots/mine.svg"), "keep").unwrap();
        let mut f = Folder::open(d, Kind::Run, Claim::Own).unwrap();
        f.start(true).unwrap();
        assert!(!d.join("plots/p50.svg").exists());
        assert_eq!(
            crate::files::read_to_string(d.join("plots/mine.svg")).unwrap(),
            "keep"
        );
    }

    #[test]
    fn targets_that_are_not_folders_or_regular_files_are_refused() {
        let e = Folder::open(Path::new("/dev/null"), Kind::Exec, Claim::Force)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("character device, not a folder"), "{e}");
        let e = check_file_target(Path::new("/dev/null")).unwrap_err();
        assert!(e.contains("character device, not a regular file"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
        let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
        assert_eq!(made, 0);
        assert!(check_file_target(&fifo).unwrap_err().contains("FIFO"));
        let e = write_atomic(&fifo, b"x").unwrap_err().to_string();
        assert!(e.contains("FIFO (named pipe), not a regular file"), "{e}");
        fs::write(d.join("real.html"), "mine").unwrap();
        std::os::unix::fs::symlink(d.join("real.html"), d.join("link.html")).unwrap();
        assert!(check_file_target(&d.join("link.html"))
            .unwrap_err()
            .contains("symbolic link"));
        assert!(write_atomic(&d.join("link.html"), b"x").is_err());
        assert_eq!(
            crate::files::read_to_string(d.join("real.html")).unwrap(),
            "mine"
        );
        assert!(check_file_target(d).unwrap_err().contains("is a folder"));
        assert!(check_file_target(&d.join("new.html")).is_ok());
        assert!(check_file_target(&d.join("no/such/dir.html"))
            .unwrap_err()
            .contains("does not exist"));
        // A page inside another command's results folder is that folder's business.
        let r = d.join("results");
        Folder::open(&r, Kind::Run, Claim::Own)
            .unwrap()
            .start(true)
            .unwrap();
        let e = check_file_target(&r.join("report.html")).unwrap_err();
        assert!(e.contains("results folder of `alloclab run`"), "{e}");
    }

    #[test]
    fn report_rebuilds_only_a_folder_of_its_kind() {
        let dir = users_folder();
        let e = Folder::open(dir.path(), Kind::Run, Claim::Existing)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a results folder"), "{e}");
        let legacy = tempfile::tempdir().unwrap();
        fs::write(legacy.path().join("plan.json"), "{}").unwrap();
        assert!(Folder::open(legacy.path(), Kind::Run, Claim::Existing).is_ok());
    }

    #[test]
    fn paths_outside_the_folder_are_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let f = Folder::open(dir.path(), Kind::Exec, Claim::Own).unwrap();
        for bad in [
            "../x",
            "/etc/x",
            "a//b",
            "./x",
            ".lock",
            STATUS_FILE,
            JOURNAL,
            "",
        ] {
            assert!(f.text(bad, "x").is_err(), "{bad}");
        }
    }

    #[test]
    fn pages_an_earlier_generate_wrote_without_folder_json_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::write(d.join("alloclab.1"), "old").unwrap();
        fs::write(d.join("alloclab-old-command.1"), "old").unwrap();
        let mut f = Folder::open(d, Kind::Generate, Claim::Own).unwrap();
        f.start(true).unwrap();
        assert!(!d.join("alloclab-old-command.1").exists());
        drop(f);
        // Anything else in it makes it a folder of someone else's.
        let other = tempfile::tempdir().unwrap();
        fs::write(other.path().join("alloclab.1"), "old").unwrap();
        fs::write(other.path().join("notes.txt"), "mine").unwrap();
        assert!(Folder::open(other.path(), Kind::Generate, Claim::Own).is_err());
    }

    #[test]
    fn a_manifest_naming_paths_outside_the_folder_removes_nothing_there() {
        let outer = tempfile::tempdir().unwrap();
        let d = outer.path().join("r");
        let victim = outer.path().join("victim");
        fs::write(&victim, "mine").unwrap();
        let mut f = Folder::open(&d, Kind::Trace, Claim::Own).unwrap();
        f.start(true).unwrap();
        f.text("trace.json", "{}").unwrap();
        f.finish(true).unwrap();
        drop(f);
        // folder.json edited by hand: "../victim" and the victim's absolute path.
        let mut st = status(&d).unwrap().unwrap();
        st.files = Some(vec![
            "trace.json".into(),
            "../victim".into(),
            victim.to_string_lossy().into_owned(),
        ]);
        fs::write(d.join(STATUS_FILE), serde_json::to_string(&st).unwrap()).unwrap();
        let mut f = Folder::open(&d, Kind::Trace, Claim::Own).unwrap();
        f.start(true).unwrap();
        assert_eq!(crate::files::read_to_string(&victim).unwrap(), "mine");
        assert!(!d.join("trace.json").exists());
    }

    #[test]
    fn a_sub_folder_replaced_by_a_symbolic_link_is_neither_written_nor_cleaned_through() {
        let outer = tempfile::tempdir().unwrap();
        let d = outer.path().join("r");
        let shared = outer.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::write(shared.join("p50.svg"), "mine").unwrap();
        let mut f = Folder::open(&d, Kind::Run, Claim::Own).unwrap();
        f.start(true).unwrap();
        f.text("plots/p50.svg", "<svg/>").unwrap();
        f.finish(true).unwrap();
        drop(f);
        fs::remove_dir_all(d.join("plots")).unwrap();
        std::os::unix::fs::symlink(&shared, d.join("plots")).unwrap();
        let mut f = Folder::open(&d, Kind::Run, Claim::Own).unwrap();
        f.start(true).unwrap();
        assert_eq!(
            crate::files::read_to_string(shared.join("p50.svg")).unwrap(),
            "mine"
        );
        let e = f.text("plots/p50.svg", "<svg/>").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(
            crate::files::read_to_string(shared.join("p50.svg")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn the_lock_and_the_journal_are_never_opened_through_a_symbolic_link() {
        let outer = tempfile::tempdir().unwrap();
        let victim = outer.path().join("victim");
        fs::write(&victim, "mine").unwrap();
        let d = outer.path().join("r");
        fs::create_dir(&d).unwrap();
        std::os::unix::fs::symlink(&victim, d.join(LOCK)).unwrap();
        assert!(Folder::open(&d, Kind::Exec, Claim::Own).is_err());
        assert_eq!(crate::files::read_to_string(&victim).unwrap(), "mine");
        let d = outer.path().join("r2");
        let mut f = Folder::open(&d, Kind::Exec, Claim::Own).unwrap();
        f.start(true).unwrap();
        std::os::unix::fs::symlink(&victim, d.join(JOURNAL)).unwrap();
        assert!(f.text("exec.json", "{}").is_err());
        assert_eq!(crate::files::read_to_string(&victim).unwrap(), "mine");
    }

    #[test]
    fn nothing_is_written_anywhere_inside_another_results_folder() {
        let outer = tempfile::tempdir().unwrap();
        let d = outer.path().join("trace");
        let mut f = Folder::open(&d, Kind::Trace, Claim::Own).unwrap();
        f.start(true).unwrap();
        f.text("plots/a.svg", "<svg/>").unwrap();
        f.finish(true).unwrap();
        drop(f);
        for inside in [
            d.join("plots/sub"),
            d.join("plots/sub/deeper"),
            d.join("new"),
        ] {
            let e = Folder::open(&inside, Kind::Exec, Claim::Force)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains("inside a results folder of `alloclab trace`"),
                "{e}"
            );
            assert!(!inside.exists());
        }
        let e = check_file_target(&d.join("plots/x.html")).unwrap_err();
        assert!(e.contains("results folder of `alloclab trace`"), "{e}");
        // The folder itself is opened again as usual.
        assert!(Folder::open(&d, Kind::Trace, Claim::Own).is_ok());
    }
}
