//! The Python view of a traced command: each fault and memory syscall joined to the
//! Python stack (function, file, line) its thread was running when it happened.
//!
//! The interpreter records (see `src/python/sitecustomize.py`): one record per line
//! started, per Python frame entered and per frame left, with its native thread id and
//! CLOCK_MONOTONIC time; perf stamps its samples with the same clock (`-k mono`) and
//! thread id. **The join's rule:** an event gets the Python stack its thread had after
//! the last record at or before the event's time, each frame at its last line. What it
//! cannot see: threads that never ran Python code (a native library's workers), the
//! interpreter's start-up before the recorder started and its shutdown after the last
//! exit handler, and C code between Python frames (an event there has no frame).

use super::trace::{cause, Event, EventKind};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The bootstrap the interpreter imports as `sitecustomize` (first on PYTHONPATH).
pub const BOOTSTRAP: &str = include_str!("../python/sitecustomize.py");

/// One record's size in the recorder's files: kind u8, tid u32, time u64, code u32, line
/// i32, little-endian, packed.
const RECORD: usize = 21;

/// A Python code object: function (qualified name), file and first line.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Code {
    pub function: String,
    /// The file as shown (a name that is not UTF-8 with its bytes replaced).
    pub file: String,
    pub first_line: u32,
    /// The file's path as the file system has it, to read its lines from.
    #[serde(skip)]
    pub path: std::path::PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Line,
    /// A frame's line at a fork, written by the child: not a line started.
    At,
    Enter,
    Leave,
    Stop,
}

#[derive(Clone, Copy, Debug)]
struct Rec {
    kind: Kind,
    time_ns: u64,
    /// Index into [`Recording::codes`].
    code: usize,
    line: u32,
}

/// What the recorder wrote, all processes together.
#[derive(Debug, Default)]
pub struct Recording {
    pub codes: Vec<Code>,
    /// The processes that recorded (pid), and whether each reached its exit handlers.
    pub processes: Vec<(u32, bool)>,
    /// Processes whose recorder stopped at its limit of records, and when.
    pub full: Vec<(u32, u64)>,
    /// Why a process's recorder stopped before its end or never started (it gave
    /// way to the program, or failed), as it said: (pid, time, reason).
    pub notes: Vec<(u32, u64, String)>,
    /// Records by thread, in time order.
    threads: HashMap<u32, Vec<Rec>>,
    /// When each process's recorder stopped (its last exit handler), by its threads.
    stopped: HashMap<u32, u64>,
    /// When a full recorder stopped, by its process's threads.
    limited: HashMap<u32, u64>,
    /// When a recorder stopped early for a reason in its notes, by its process's threads.
    halted: HashMap<u32, u64>,
    /// Processes that ended without their exit handlers: records after the last one
    /// written are lost.
    cut_short: std::collections::HashSet<u32>,
    /// How many times each (code, line) started.
    pub executions: HashMap<(usize, u32), u64>,
    code_ids: HashMap<Code, usize>,
}

/// Reads every process's files in `dir` (`lines-PID.bin`, `codes-PID.tsv`, and the
/// recorder's `notes-PID.txt` where it stopped early or never started). Records of the
/// bootstrap's own code are dropped.
pub fn read_dir(dir: &Path) -> Result<Recording, String> {
    let mut rec = Recording::default();
    let bootstrap = dir
        .parent()
        .map(|p| p.join("sitecustomize.py").to_string_lossy().into_owned());
    let names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let pids_of = |prefix: &str, suffix: &str| {
        let mut pids: Vec<u32> = names
            .iter()
            .filter_map(|n| n.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok())
            .collect();
        pids.sort_unstable();
        pids
    };
    for pid in pids_of("notes-", ".txt") {
        let text = crate::files::read(dir.join(format!("notes-{pid}.txt")))
            .map_err(|e| format!("the recorder's notes of process {pid}: {e}"))?;
        for line in String::from_utf8_lossy(&text).lines() {
            if let Some((t, why)) = line.split_once('\t') {
                rec.notes
                    .push((pid, t.parse().unwrap_or(0), why.trim().to_string()));
            }
        }
    }
    // One pair of files per program a process ran: `PID`, then `PID.1`, … for the
    // programs it exec'd into (the same pid).
    let mut stems: Vec<(u32, u32, String)> = names
        .iter()
        .filter_map(|n| {
            let stem = n.strip_prefix("lines-")?.strip_suffix(".bin")?;
            let (pid, k) = match stem.split_once('.') {
                Some((p, k)) => (p.parse().ok()?, k.parse().ok()?),
                None => (stem.parse().ok()?, 0),
            };
            Some((pid, k, stem.to_string()))
        })
        .collect();
    stems.sort();
    for (pid, _, stem) in stems {
        let table = crate::files::read(dir.join(format!("codes-{stem}.tsv")))
            .map_err(|e| format!("the recorder's code table of process {pid}: {e}"))?;
        let data = crate::files::read(dir.join(format!("lines-{stem}.bin")))
            .map_err(|e| format!("the recorder's records of process {pid}: {e}"))?;
        let (ends, tids) = rec.add(&table, &data, bootstrap.as_deref());
        let Ends {
            stopped,
            full,
            halted,
        } = ends;
        rec.processes.push((pid, stopped.is_some()));
        if stopped.is_none() {
            rec.cut_short.insert(pid);
        } else {
            // An earlier program of the pid that exec'd wrote its stop before the exec.
            rec.cut_short.remove(&pid);
        }
        if let Some(t) = full {
            rec.full.push((pid, t));
        }
        for tid in tids {
            if let Some(t) = stopped {
                rec.stopped.insert(tid, t);
            }
            if let Some(t) = full {
                rec.limited.insert(tid, t);
            }
            if let Some(t) = halted {
                rec.halted.insert(tid, t);
            }
        }
    }
    Ok(rec)
}

/// A little-endian u32 of 4 bytes (a record's field).
fn le_u32(b: &[u8]) -> u32 {
    b.iter().rev().fold(0, |v, &x| (v << 8) | x as u32)
}

/// A little-endian u64 of 8 bytes (a record's field).
fn le_u64(b: &[u8]) -> u64 {
    b.iter().rev().fold(0, |v, &x| (v << 8) | x as u64)
}

/// When one process's recorder ended: at its exit handlers (None: it never reached
/// them), at its limit of records, and early for a reason in its notes.
#[derive(Default)]
struct Ends {
    stopped: Option<u64>,
    full: Option<u64>,
    halted: Option<u64>,
}

impl Recording {
    /// Adds one process's code table (`index\tfirst line\tfunction\tfile`, the file as
    /// the file system's bytes) and records; returns when its recorder ended and its
    /// threads.
    fn add(&mut self, table: &[u8], data: &[u8], bootstrap: Option<&str>) -> (Ends, Vec<u32>) {
        use std::os::unix::ffi::OsStrExt as _;
        // Codes are one across processes (a forked child's table names its parent's
        // functions again): by function, file and first line.
        let mut ours: HashMap<usize, bool> = HashMap::new();
        let mut index: HashMap<u32, usize> = HashMap::new();
        for line in table.split(|&b| b == b'\n') {
            let mut f = line.splitn(4, |&b| b == b'\t');
            let (Some(i), Some(first), Some(function), Some(file)) =
                (f.next(), f.next(), f.next(), f.next())
            else {
                continue;
            };
            let number = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<u32>().ok();
            let (Some(i), Some(first_line)) = (number(i), number(first)) else {
                continue;
            };
            let function = String::from_utf8_lossy(function).into_owned();
            let code = Code {
                function,
                file: String::from_utf8_lossy(file).into_owned(),
                first_line,
                path: std::ffi::OsStr::from_bytes(file).into(),
            };
            let (function, file) = (code.function.as_str(), code.file.as_str());
            let bootstraps = Some(file) == bootstrap
                || (file.ends_with("sitecustomize.py") && function.starts_with("_alloclab"));
            let id = match self.code_ids.get(&code) {
                Some(&id) => id,
                None => {
                    self.codes.push(code.clone());
                    self.code_ids.insert(code, self.codes.len() - 1);
                    self.codes.len() - 1
                }
            };
            ours.insert(id, bootstraps);
            index.insert(i, id);
        }
        let mut ends = Ends::default();
        let mut tids = Vec::new();
        for r in data.chunks_exact(RECORD) {
            let kind = match r[0] {
                0 => Kind::Line,
                1 => Kind::Enter,
                2 => Kind::Leave,
                3 => Kind::Stop,
                5 => Kind::At,
                4 => {
                    ends.full = Some(le_u64(&r[5..13]));
                    continue;
                }
                6 => {
                    ends.halted = Some(le_u64(&r[5..13]));
                    continue;
                }
                _ => continue,
            };
            let tid = le_u32(&r[1..5]);
            let time_ns = le_u64(&r[5..13]);
            let code = le_u32(&r[13..17]);
            let line = (le_u32(&r[17..21]) as i32).max(0) as u32;
            if kind == Kind::Stop {
                // Kept in the thread's records too: a program exec'd into the same
                // process starts from an empty stack.
                ends.stopped = Some(time_ns);
                let v = self.threads.entry(tid).or_default();
                if v.is_empty() {
                    tids.push(tid);
                }
                v.push(Rec {
                    kind,
                    time_ns,
                    code: 0,
                    line: 0,
                });
                continue;
            }
            let Some(&code) = index.get(&code) else {
                continue;
            };
            if ours.get(&code).copied().unwrap_or(false) {
                continue;
            }
            if kind == Kind::Line {
                *self.executions.entry((code, line)).or_insert(0) += 1;
            }
            let v = self.threads.entry(tid).or_default();
            if v.is_empty() {
                tids.push(tid);
            }
            v.push(Rec {
                kind,
                time_ns,
                code,
                line,
            });
        }
        for v in self.threads.values_mut() {
            v.sort_by_key(|r| r.time_ns);
        }
        (ends, tids)
    }
}

/// A frame of a joined Python stack: the code and the line it was at.
pub type PyFrame = (usize, u32);

/// Where an event stands in the Python view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Joined {
    /// The Python stack, outermost first.
    Stack(Vec<PyFrame>),
    /// The thread never ran Python code the recorder saw (a native library's thread).
    NativeThread,
    /// Before the thread's first record (the interpreter's start-up).
    BeforeRecorder,
    /// After the process's last exit handler (the interpreter's shutdown).
    AfterRecorder,
    /// After the recorder stopped at its limit of records.
    AfterLimit,
    /// After the recorder stopped early for a reason its notes give (it gave its
    /// sys.monitoring tool id to the program, or failed).
    AfterHalt,
    /// In a process that ended without its exit handlers, after the last record it
    /// wrote (the rest were lost).
    Lost,
    /// In C code outside any Python frame the recorder saw.
    NoFrame,
}

/// Applies one record to a thread's stack.
fn apply(stack: &mut Vec<PyFrame>, r: &Rec) {
    match r.kind {
        Kind::Enter => stack.push((r.code, r.line)),
        Kind::Line | Kind::At => match stack.iter().rposition(|f| f.0 == r.code) {
            // A line of a frame below the top: the frames above it ended unseen.
            Some(i) => {
                stack.truncate(i + 1);
                stack[i].1 = r.line;
            }
            // A frame entered before the recorder started.
            None => stack.push((r.code, r.line)),
        },
        Kind::Leave => {
            if let Some(i) = stack.iter().rposition(|f| f.0 == r.code) {
                stack.truncate(i);
            }
        }
        // The recorder stopped (an exit or an exec): no frame of it goes on.
        Kind::Stop => stack.clear(),
    }
}

/// Joins each of `events` (process, thread, time) to its thread's Python stack at that
/// time.
pub fn join(rec: &Recording, events: &[(u32, u32, u64)]) -> Vec<Joined> {
    join_teardowns(rec, events, &[])
}

/// The native functions in which CPython tears a Python frame down once it has returned
/// or unwound (its locals released: `clear_thread_frame → _PyFrame_ClearExceptCode →
/// array_dealloc → free`); the frame's return or unwind event came before them.
const TEARDOWN: [&str; 6] = [
    "clear_thread_frame",
    "clear_gen_frame",
    "_PyEval_FrameClearAndPop",
    "_PyFrame_ClearExceptCode",
    "_PyFrame_ClearLocals",
    "_PyFrame_Clear",
];

/// Whether `e` happened while a Python frame was torn down: a teardown function inner to
/// the evaluation loop that runs the frames (or to perf's Python frame).
pub fn in_teardown(e: &Event) -> bool {
    e.frames
        .iter()
        .take_while(|f| !f.name.starts_with("py::") && !f.name.contains("_PyEval_EvalFrame"))
        .any(|f| {
            let n = super::trace::short_name(f);
            TEARDOWN.iter().any(|t| n == *t)
        })
}

/// [`join`], where `teardown[i]` says event i happened while a frame was torn down
/// ([`in_teardown`]; missing: not): such an event, right after its thread left a frame
/// (no record between), is that frame's — at its last line — not its caller's, whose
/// line the return event already gave back.
pub fn join_teardowns(
    rec: &Recording,
    events: &[(u32, u32, u64)],
    teardown: &[bool],
) -> Vec<Joined> {
    let mut out = vec![Joined::NativeThread; events.len()];
    let mut by_tid: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, (_, tid, _)) in events.iter().enumerate() {
        by_tid.entry(*tid).or_default().push(i);
    }
    for (tid, mut idx) in by_tid {
        let Some(records) = rec.threads.get(&tid) else {
            for i in idx {
                if rec.cut_short.contains(&events[i].0) {
                    out[i] = Joined::Lost;
                }
            }
            continue;
        };
        idx.sort_by_key(|&i| events[i].2);
        let stop = rec.stopped.get(&tid).copied();
        let limit = rec.limited.get(&tid).copied();
        let halt = rec.halted.get(&tid).copied();
        let last = records.last().map_or(0, |r| r.time_ns);
        let mut stack: Vec<PyFrame> = Vec::new();
        // The frame the thread's last record left, with its last line.
        let mut left: Option<PyFrame> = None;
        let mut next = 0;
        for i in idx {
            let (pid, _, t) = events[i];
            while next < records.len() && records[next].time_ns <= t {
                let r = &records[next];
                left = match r.kind {
                    Kind::Leave => stack.iter().rev().find(|f| f.0 == r.code).copied(),
                    _ => None,
                };
                apply(&mut stack, r);
                next += 1;
            }
            let torn = teardown.get(i).copied().unwrap_or(false);
            out[i] = if next == 0 {
                Joined::BeforeRecorder
            } else if limit.is_some_and(|s| t > s) {
                Joined::AfterLimit
            } else if halt.is_some_and(|s| t > s) {
                Joined::AfterHalt
            } else if stop.is_some_and(|s| t > s) {
                Joined::AfterRecorder
            } else if stop.is_none() && t > last && rec.cut_short.contains(&pid) {
                Joined::Lost
            } else if let Some(f) = left.filter(|_| torn) {
                let mut s = stack.clone();
                s.push(f);
                Joined::Stack(s)
            } else if stack.is_empty() {
                Joined::NoFrame
            } else {
                Joined::Stack(stack.clone())
            };
        }
    }
    out
}

/// One row of the "by line" table: an event kind at one Python line.
#[derive(Clone, Debug, Serialize)]
pub struct LineRow {
    /// fault, brk, mmap, munmap, madvise, mremap.
    pub kind: String,
    pub function: String,
    pub file: String,
    pub line: u32,
    /// The line's text (None where the file cannot be read).
    pub source: Option<String>,
    /// Events at this line (faults: every fault where counted, else samples × period).
    pub count: u64,
    /// Of the kind's events in the run.
    pub share: f64,
    /// How many times the line started in the run, and the events per start.
    pub executions: u64,
    pub per_execution: Option<f64>,
    /// The native call path most of these events came through (from their stacks).
    pub cause: Option<String>,
    /// The innermost Python frame most of these events were in, where that is not this
    /// line: the standard library's code the line called (an import's machinery).
    pub via: Option<String>,
}

/// Events of one kind that no Python line could be given, by reason.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Unjoined {
    pub native_thread: u64,
    pub before_recorder: u64,
    pub after_recorder: u64,
    pub after_limit: u64,
    pub after_halt: u64,
    pub lost: u64,
    pub no_frame: u64,
}

/// The Python view of one traced run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PythonView {
    /// Events given a Python line, and all events, per kind.
    pub joined: BTreeMap<String, (u64, u64)>,
    pub unjoined: BTreeMap<String, Unjoined>,
    /// Of the samples whose native stack holds perf's own Python frame (`py::…`, from
    /// the interpreter's perf support): how many the join gave the same innermost
    /// function, of how many.
    pub perf_frames_agree: Option<(u64, u64)>,
    /// The samples where they differ, by kind of event and why: (kind, why, samples).
    pub perf_frames_disagree: Vec<(String, String, u64)>,
    /// Processes that recorded, and those that ended without running their exit
    /// handlers (their last records are lost).
    pub processes: usize,
    pub processes_cut_short: usize,
    /// Processes whose recorder stopped at its limit of records (the events after it
    /// count as after the recorder).
    pub processes_full: usize,
    /// Why a process's recorder stopped early or never started, as it said: "process
    /// PID: reason" (its events after that have no line; the program ran on untouched).
    pub recorder_notes: Vec<String>,
    pub lines: Vec<LineRow>,
    /// Per bin of the timeline: the Python line most of the bin's faults and memory
    /// syscalls were at (None: none was at a line).
    #[serde(skip)]
    pub bin_lines: Vec<Option<String>>,
    /// Folded stacks, Python frames (outermost first) above the native frames the
    /// innermost one called: faults (sampled, with stacks) and memory syscalls.
    #[serde(skip)]
    pub faults_folded: Vec<String>,
    #[serde(skip)]
    pub syscalls_folded: Vec<String>,
}

/// The innermost frame perf's perf-support trampolines name: `py::func2:/path/x.py`
/// → (`func2`, `/path/x.py`).
fn perf_python_frame(e: &Event) -> Option<(String, String)> {
    e.frames.iter().find_map(|f| {
        let rest = f.name.strip_prefix("py::")?;
        let (name, file) = rest.split_once(':')?;
        Some((name.to_string(), file.to_string()))
    })
}

/// The native frames the innermost Python frame called, outermost first (the frames
/// inward of perf's innermost `py::` trampoline, or of the interpreter's evaluation loop).
fn native_below_python(e: &Event) -> Vec<String> {
    let cut = e
        .frames
        .iter()
        .position(|f| f.name.starts_with("py::") || f.name.contains("_PyEval_EvalFrame"));
    let inner = match cut {
        Some(i) => &e.frames[..i],
        None => &e.frames[..],
    };
    let mut names: Vec<String> = inner
        .iter()
        .map(|f| super::trace::short_name(f).replace(';', ":"))
        .filter(|n| !n.starts_with("_PyEval") && !n.starts_with("PyObject_Vectorcall"))
        .collect();
    names.reverse();
    names
}

/// The frame the import machinery's frames are folded into.
const IMPORT: &str = "[import machinery]";

fn frame_name(c: &Code, line: u32) -> String {
    let file = Path::new(&c.file)
        .file_name()
        .map_or(c.file.clone(), |f| f.to_string_lossy().into_owned());
    format!("{} ({file}:{line})", c.function).replace(';', ":")
}

/// The text of `line` in `file`, trimmed (files read once).
fn source_line(
    cache: &mut HashMap<std::path::PathBuf, Option<Vec<String>>>,
    file: &Path,
    line: u32,
) -> Option<String> {
    let lines = cache.entry(file.to_path_buf()).or_insert_with(|| {
        crate::files::read_to_string(file)
            .ok()
            .map(|t| t.lines().map(|l| l.trim().to_string()).collect())
    });
    lines
        .as_ref()?
        .get(line.checked_sub(1)? as usize)
        .filter(|l| !l.is_empty())
        .cloned()
}

/// Whether `file` is the interpreter's own code: a frozen module or a file of the
/// standard library folders `stdlib` (installed packages inside them are not).
fn is_interpreters(file: &str, stdlib: &[String]) -> bool {
    file.starts_with("<frozen ")
        || (stdlib
            .iter()
            .any(|d| !d.is_empty() && Path::new(file).starts_with(d))
            && !file.contains("/site-packages/")
            && !file.contains("/dist-packages/"))
}

/// The frame an event is put at: the innermost one of the program's own code (not the
/// standard library's), else the innermost.
fn site(rec: &Recording, stack: &[PyFrame], stdlib: &[String]) -> PyFrame {
    stack
        .iter()
        .rev()
        .find(|(c, _)| !is_interpreters(&rec.codes[*c].file, stdlib))
        .or(stack.last())
        .copied()
        .expect("a joined stack has a frame")
}

/// The Python view of `events` (the run's samples: stacked syscalls and faults, and
/// the unstacked exact faults where `exact_faults`); `stdlib`: the interpreter's
/// standard library folders, whose frames give way to the program's line that called
/// them.
/// `bins`: the timeline's start, bin width and number of bins.
pub fn view(
    rec: &Recording,
    events: &[&Event],
    exact_faults: bool,
    stdlib: &[String],
    bins: (u64, u64, usize),
) -> PythonView {
    let mut in_bins: Vec<BTreeMap<PyFrame, u64>> = vec![BTreeMap::new(); bins.2];
    let keys: Vec<(u32, u32, u64)> = events.iter().map(|e| (e.pid, e.tid, e.time_ns)).collect();
    let teardown: Vec<bool> = events.iter().map(|e| in_teardown(e)).collect();
    let joined = join_teardowns(rec, &keys, &teardown);
    let mut v = PythonView {
        processes: rec.processes.len(),
        processes_cut_short: rec.processes.iter().filter(|p| !p.1).count(),
        processes_full: rec.full.len(),
        recorder_notes: rec
            .notes
            .iter()
            .map(|(pid, _, why)| format!("process {pid}: {why}"))
            .collect(),
        ..PythonView::default()
    };
    // (kind, code, line) → count, and the causes of the stacked ones.
    let mut at: BTreeMap<(String, usize, u32), u64> = BTreeMap::new();
    let mut causes: HashMap<(String, usize, u32), BTreeMap<String, u64>> = HashMap::new();
    let mut folded: [BTreeMap<String, u64>; 2] = [BTreeMap::new(), BTreeMap::new()];
    let mut agree = (0u64, 0u64);
    let mut disagree: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut vias: HashMap<(String, usize, u32), BTreeMap<PyFrame, u64>> = HashMap::new();
    for (e, j) in events.iter().zip(&joined) {
        // Faults are counted from the exact tracepoint where it was recorded, else from
        // the samples; their stacks come from the samples either way.
        let (kind, counts) = match e.kind {
            EventKind::UserFault => ("fault", true),
            EventKind::Fault => ("fault", !exact_faults),
            k if k.is_syscall() => ("", true),
            _ => continue,
        };
        // A syscall by its name and, for madvise, its advice ("madvise(HUGEPAGE)").
        let kind = if kind.is_empty() {
            e.call()
        } else {
            kind.to_string()
        };
        let stacked = e.kind != EventKind::UserFault;
        if counts {
            let slot = v.joined.entry(kind.clone()).or_insert((0, 0));
            slot.1 += e.weight;
            if matches!(j, Joined::Stack(_)) {
                slot.0 += e.weight;
            }
            let u = v.unjoined.entry(kind.clone()).or_default();
            match j {
                Joined::NativeThread => u.native_thread += e.weight,
                Joined::BeforeRecorder => u.before_recorder += e.weight,
                Joined::AfterRecorder => u.after_recorder += e.weight,
                Joined::AfterLimit => u.after_limit += e.weight,
                Joined::AfterHalt => u.after_halt += e.weight,
                Joined::Lost => u.lost += e.weight,
                Joined::NoFrame => u.no_frame += e.weight,
                Joined::Stack(_) => {}
            }
        }
        let Joined::Stack(stack) = j else { continue };
        let (code, line) = site(rec, stack, stdlib);
        let key = (kind.clone(), code, line);
        if counts {
            *at.entry(key.clone()).or_insert(0) += e.weight;
            let b = (e.time_ns.saturating_sub(bins.0) / bins.1.max(1)) as usize;
            if let Some(m) = in_bins.get_mut(b) {
                *m.entry((code, line)).or_insert(0) += e.weight;
            }
            let inner = *stack.last().expect("a joined stack has a frame");
            if inner != (code, line) {
                *vias
                    .entry(key.clone())
                    .or_default()
                    .entry(inner)
                    .or_insert(0) += e.weight;
            }
        }
        if !stacked {
            continue;
        }
        *causes.entry(key).or_default().entry(cause(e)).or_insert(0) += e.weight;
        if let Some((name, file)) = perf_python_frame(e) {
            let names = |c: &Code| {
                let short = c.function.rsplit('.').next().unwrap_or(&c.function);
                file == c.file && (name == c.function || name == short)
            };
            let (inner, outer) = stack.split_last().expect("a joined stack has a frame");
            agree.1 += 1;
            if names(&rec.codes[inner.0]) {
                agree.0 += 1;
            } else {
                let why = if outer.iter().any(|f| names(&rec.codes[f.0])) {
                    "perf's innermost Python frame is an outer frame of the join's stack (the join has a deeper frame: one entered before perf's trampoline, or left after it)"
                } else {
                    "perf names a frame the join's stack does not hold (entered and left between two of the recorder's records, or C code that runs Python outside a frame the recorder saw)"
                };
                *disagree.entry((kind.clone(), why.to_string())).or_insert(0) += 1;
            }
        }
        // The import machinery's frozen frames, one after another, are one frame.
        let mut names: Vec<String> = Vec::new();
        for &(c, l) in stack {
            let code = &rec.codes[c];
            if code.file.starts_with("<frozen importlib") {
                if names.last().map(String::as_str) != Some(IMPORT) {
                    names.push(IMPORT.into());
                }
            } else {
                names.push(frame_name(code, l));
            }
        }
        names.extend(native_below_python(e));
        let which = if e.kind.is_syscall() {
            names.push(e.kind.name().to_string());
            1
        } else {
            0
        };
        *folded[which].entry(names.join(";")).or_insert(0) += e.weight;
    }
    v.perf_frames_agree = (agree.1 > 0).then_some(agree);
    v.perf_frames_disagree = disagree.into_iter().map(|((k, w), n)| (k, w, n)).collect();
    v.bin_lines = in_bins
        .iter()
        .map(|m| {
            m.iter()
                .max_by_key(|(_, n)| **n)
                .map(|(&(c, l), _)| frame_name(&rec.codes[c], l))
        })
        .collect();
    let mut files = HashMap::new();
    for ((kind, code, line), count) in at {
        let total = v.joined.get(&kind).map_or(0, |j| j.1);
        let c = &rec.codes[code];
        let executions = rec.executions.get(&(code, line)).copied().unwrap_or(0);
        let cause = causes
            .get(&(kind.clone(), code, line))
            .and_then(|m| m.iter().max_by_key(|(_, n)| **n).map(|(c, _)| c.clone()));
        let via = vias.get(&(kind.clone(), code, line)).and_then(|m| {
            m.iter()
                .max_by_key(|(_, n)| **n)
                .filter(|(_, n)| 2 * **n >= count)
                .map(|(&(c, l), _)| frame_name(&rec.codes[c], l))
        });
        v.lines.push(LineRow {
            via,
            kind,
            function: c.function.clone(),
            file: c.file.clone(),
            line,
            source: source_line(&mut files, &c.path, line),
            count,
            share: if total > 0 {
                count as f64 / total as f64
            } else {
                0.0
            },
            executions,
            per_execution: (executions > 0).then(|| count as f64 / executions as f64),
            cause,
        });
    }
    // Kinds in the lab's order, then the lines with the most events first.
    let order = |k: &str| {
        ["fault", "brk", "mmap", "munmap", "madvise", "mremap"]
            .iter()
            .position(|x| *x == k)
            .unwrap_or(9)
    };
    v.lines.sort_by(|a, b| {
        order(&a.kind)
            .cmp(&order(&b.kind))
            .then(b.count.cmp(&a.count))
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
    });
    let [f, s] = folded;
    v.faults_folded = f.into_iter().map(|(k, n)| format!("{k} {n}")).collect();
    v.syscalls_folded = s.into_iter().map(|(k, n)| format!("{k} {n}")).collect();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec_bytes(recs: &[(u8, u32, u64, u32, i32)]) -> Vec<u8> {
        let mut v = Vec::new();
        for &(k, tid, t, code, line) in recs {
            v.push(k);
            v.extend(tid.to_le_bytes());
            v.extend(t.to_le_bytes());
            v.extend(code.to_le_bytes());
            v.extend(line.to_le_bytes());
        }
        v
    }

    /// main (line 10) calls f at 20; f runs lines 2 and 3 and returns; main goes on at
    /// line 11 after the call's line; the recorder stops at 100.
    fn recording() -> Recording {
        let table = "0\t1\t<module>\t/x/s.py\n1\t1\tf\t/x/s.py\n2\t90\t_alloclab_record.<locals>.finish\t/y/sitecustomize.py\nend\n";
        let data = rec_bytes(&[
            (1, 7, 5, 0, 1),
            (0, 7, 6, 0, 10),
            (1, 7, 20, 1, 1),
            (0, 7, 21, 1, 2),
            (0, 7, 30, 1, 3),
            (2, 7, 40, 1, 0),
            (0, 7, 50, 0, 11),
            (2, 7, 60, 0, 0),
            (1, 7, 90, 2, 90),
            (3, 7, 100, 2, 0),
        ]);
        let mut r = Recording::default();
        let (ends, tids) = r.add(table.as_bytes(), &data, Some("/y/sitecustomize.py"));
        r.processes.push((1, ends.stopped.is_some()));
        for t in tids {
            r.stopped.insert(t, ends.stopped.unwrap());
        }
        r
    }

    #[test]
    fn an_event_gets_its_threads_stack_as_of_the_last_record_before_it() {
        let r = recording();
        let j = join(
            &r,
            &[
                (1, 7, 4),
                (1, 7, 25),
                (1, 7, 45),
                (1, 7, 55),
                (1, 7, 70),
                (1, 7, 95),
                (1, 7, 101),
                (1, 8, 25),
            ],
        );
        assert_eq!(j[0], Joined::BeforeRecorder);
        assert_eq!(j[1], Joined::Stack(vec![(0, 10), (1, 2)]));
        // After f returned, main is still at the line that called it.
        assert_eq!(j[2], Joined::Stack(vec![(0, 10)]));
        assert_eq!(j[3], Joined::Stack(vec![(0, 11)]));
        assert_eq!(j[4], Joined::NoFrame);
        // The bootstrap's own exit handler is not a Python frame of the program.
        assert_eq!(j[5], Joined::NoFrame);
        assert_eq!(j[6], Joined::AfterRecorder);
        assert_eq!(j[7], Joined::NativeThread);
        assert_eq!(r.executions.get(&(1, 2)), Some(&1));
    }

    /// An event in a frame's teardown right after its return (f returned at 40) is f's,
    /// at its last line; the same moment outside a teardown is the caller's; once the
    /// caller has gone on (its next line at 50), a teardown is no longer f's.
    #[test]
    fn a_free_in_a_frames_teardown_is_the_frames() {
        let r = recording();
        let events = [(1, 7, 45), (1, 7, 45), (1, 7, 55)];
        let j = join_teardowns(&r, &events, &[true, false, true]);
        assert_eq!(j[0], Joined::Stack(vec![(0, 10), (1, 3)]));
        assert_eq!(j[1], Joined::Stack(vec![(0, 10)]));
        assert_eq!(j[2], Joined::Stack(vec![(0, 11)]));
        let frame = |name: &str| crate::analysis::trace::Frame {
            name: name.into(),
            inlined: false,
        };
        let mut e = Event {
            time_ns: 0,
            pid: 1,
            tid: 7,
            kind: EventKind::Munmap,
            weight: 1,
            arg: None,
            rss_member: None,
            advice: None,
            frames: [
                "__munmap",
                "free",
                "array_dealloc",
                "_PyFrame_ClearExceptCode",
                "clear_thread_frame",
                "_PyEval_EvalFrameDefault",
            ]
            .map(frame)
            .to_vec(),
        };
        assert!(in_teardown(&e));
        // Below the evaluation loop (the caller's own frame being cleared by its
        // caller's loop) is not this event's teardown.
        e.frames = [
            "__munmap",
            "free",
            "_PyEval_EvalFrameDefault",
            "clear_thread_frame",
        ]
        .map(frame)
        .to_vec();
        assert!(!in_teardown(&e));
    }

    #[test]
    fn events_after_the_last_record_of_a_process_cut_short_are_lost_not_native() {
        let table = "0\t1\t<module>\t/x/s.py\n";
        let data = rec_bytes(&[(1, 7, 5, 0, 1), (0, 7, 6, 0, 2)]);
        let mut r = Recording::default();
        let (ends, _) = r.add(table.as_bytes(), &data, None);
        assert!(ends.stopped.is_none());
        r.cut_short.insert(3);
        let j = join(&r, &[(3, 7, 6), (3, 7, 50), (3, 9, 50), (4, 10, 50)]);
        assert_eq!(j[0], Joined::Stack(vec![(0, 2)]));
        assert_eq!(j[1], Joined::Lost);
        // A thread of that process with no record left: lost too, not a native thread.
        assert_eq!(j[2], Joined::Lost);
        assert_eq!(j[3], Joined::NativeThread);
    }

    #[test]
    fn a_line_of_a_frame_below_the_top_ends_the_frames_above_it() {
        let mut s = vec![(0, 1), (1, 5), (2, 9)];
        apply(
            &mut s,
            &Rec {
                kind: Kind::Line,
                time_ns: 0,
                code: 1,
                line: 6,
            },
        );
        assert_eq!(s, vec![(0, 1), (1, 6)]);
    }

    #[test]
    fn a_cut_off_record_at_the_end_is_not_read() {
        let mut data = rec_bytes(&[(0, 7, 6, 0, 10)]);
        data.extend([1, 2, 3]);
        let mut r = Recording::default();
        r.add(b"0\t1\tf\t/x.py\n", &data, None);
        assert_eq!(r.threads[&7].len(), 1);
    }

    /// A recorder that gave way to the program (kind 6 at 40, its notes saying why):
    /// the events after it have no line, and the notes are the view's.
    #[test]
    fn events_after_the_recorder_gave_way_have_no_line_and_the_notes_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let lines = dir.path().join("lines");
        std::fs::create_dir(&lines).unwrap();
        std::fs::write(lines.join("codes-9.tsv"), "0\t1\tmain\t/x/s.py\nend\n").unwrap();
        let data = rec_bytes(&[
            (1, 7, 5, 0, 1),
            (0, 7, 6, 0, 2),
            (6, 7, 40, 0, 0),
            (3, 7, 100, 0, 0),
        ]);
        std::fs::write(lines.join("lines-9.bin"), data).unwrap();
        std::fs::write(
            lines.join("notes-9.txt"),
            "40\tthe program took sys.monitoring tool id 5 and every other id was in use: its lines stop there\n",
        )
        .unwrap();
        // A process that never recorded says why too.
        std::fs::write(
            lines.join("notes-10.txt"),
            "3\tevery sys.monitoring tool id was in use at start-up: no lines recorded\n",
        )
        .unwrap();
        let r = read_dir(&lines).unwrap();
        let j = join(&r, &[(9, 7, 30), (9, 7, 50), (9, 7, 101)]);
        assert_eq!(j[0], Joined::Stack(vec![(0, 2)]));
        assert_eq!(j[1], Joined::AfterHalt);
        assert_eq!(j[2], Joined::AfterHalt);
        assert_eq!(r.notes.len(), 2, "{:?}", r.notes);
        assert_eq!(r.notes[0].0, 9);
        assert!(r.notes[0].2.contains("tool id 5"), "{:?}", r.notes);
        assert_eq!(r.processes, vec![(9, true)]);
    }

    /// A script whose path is not UTF-8: its code is read, shown with the bytes
    /// replaced, and its lines read from the path as the file system has it.
    #[test]
    fn a_file_name_that_is_not_utf8_is_kept_as_bytes() {
        use std::os::unix::ffi::OsStrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let mut name = b"caf".to_vec();
        name.push(0xe9);
        name.extend(b".py");
        let script = dir.path().join(std::ffi::OsStr::from_bytes(&name));
        std::fs::write(&script, "x = 1\ny = bytearray(1 << 20)\n").unwrap();
        let mut table = b"0\t1\t<module>\t".to_vec();
        table.extend(script.as_os_str().as_bytes());
        table.push(b'\n');
        let mut r = Recording::default();
        r.add(&table, &rec_bytes(&[(1, 7, 5, 0, 1)]), None);
        assert_eq!(r.codes[0].path, script);
        assert!(
            r.codes[0].file.ends_with("caf\u{fffd}.py"),
            "{}",
            r.codes[0].file
        );
        let mut cache = HashMap::new();
        assert_eq!(
            source_line(&mut cache, &r.codes[0].path, 2).as_deref(),
            Some("y = bytearray(1 << 20)")
        );
    }
}
