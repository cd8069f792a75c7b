//! A traced command that is a CPython program: found, and run with the interpreter's
//! perf support and the lab's line recorder, without editing the user's script.
//!
//! * **Which commands:** a program named `python*`, or a script whose `#!` line names
//!   one (directly or through `env`). The interpreter is asked its implementation and
//!   version; lines need CPython 3.12 or newer (`sys.monitoring`).
//! * **How:** variables in the traced run's environment only. `PYTHONPATH` gets a private
//!   folder first whose `sitecustomize.py` starts the line recorder (and then imports
//!   the interpreter's own `sitecustomize`); `ALLOCLAB_PYTHON_LINES` names the folder the
//!   recorder writes to; with `--python-perf-frames`, `PYTHONPERFSUPPORT=1` turns on the
//!   interpreter's perf trampolines (`-X perf`: each Python frame gets a native frame
//!   perf names `py::function:file`, listed in `/tmp/perf-PID.map`), whose innermost
//!   frame checks the join. Off by default: with it, a program whose daemon threads
//!   still run at exit segfaulted in 24 of 30 runs here (CPython 3.12.1), none of 20
//!   without.
//! * **Why not `-X perf_jit` (3.13):** it gives perf the whole Python stack, but only
//!   after `perf inject --jit` and with a `jitted-*.so` per function left in /tmp; the
//!   recorder already gives the whole stack with lines, and `-X perf`'s innermost frame
//!   is what the join is checked against.

//!
//! Files here are not the results folder's, so they do not go through its one writer
//! (`export::folder`): the recorder's private folder is a `tempfile` directory removed
//! whole when the run is done. The perf map files removed are the interpreter's, and
//! only those the run made: with `--python-perf-frames` only, named by the pids of the
//! traced run's own Python processes, and never one that was there before the run (in a
//! PID namespace another program's process may have had the same pid).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A CPython interpreter found behind a command.
#[derive(Clone, Debug)]
pub struct Interpreter {
    /// The interpreter's executable (what the command or its `#!` line runs).
    pub path: PathBuf,
    /// Its version, major.minor.patch ("3.12.1").
    pub version: String,
    /// The folders of its standard library (`sysconfig`'s stdlib and platstdlib).
    pub stdlib: Vec<String>,
    /// 3.12 or newer: `sys.monitoring` is there.
    pub lines: bool,
}

/// The interpreter behind `program` (run with the arguments `args`, argv[0] first), if
/// it is a Python program: Ok(None) for any other program; Err where it looks like
/// Python but the interpreter could not be asked. `env [VAR=value…] python…` counts.
pub fn detect(program: &Path, args: &[OsString]) -> Result<Option<Interpreter>, String> {
    let named = |p: &Path| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("python"))
    };
    let through_env = || -> Option<PathBuf> {
        let name = args
            .iter()
            .skip(1)
            .map(|a| a.to_string_lossy())
            .find(|a| !a.starts_with('-') && !a.contains('='))?;
        let path = std::env::var_os("PATH");
        super::spawn::resolve_program(name.as_ref().as_ref(), path.as_deref()).ok()
    };
    let interp = if named(program) {
        program.to_path_buf()
    } else if program.file_name().is_some_and(|n| n == "env") {
        match through_env() {
            Some(p) if named(&p) => p,
            _ => return Ok(None),
        }
    } else {
        match shebang(program) {
            Some(p) if named(&p) => p,
            _ => return Ok(None),
        }
    };
    let out = std::process::Command::new(&interp)
        .args([
            "-I",
            "-c",
            "import sys, sysconfig; p = sysconfig.get_paths(); print(sys.implementation.name, '%d.%d.%d' % sys.version_info[:3], sys.version_info >= (3, 12)); print(p['stdlib']); print(p['platstdlib'])",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{} could not be asked its version: {e}", interp.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let mut w = lines.next().unwrap_or("").split_whitespace();
    let stdlib: Vec<String> = lines
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect();
    match (w.next(), w.next(), w.next()) {
        (Some("cpython"), Some(v), Some(new)) => Ok(Some(Interpreter {
            path: interp,
            version: v.to_string(),
            stdlib,
            lines: new == "True",
        })),
        (Some(other), Some(v), _) => Err(format!(
            "{} is {other} {v}, not CPython: its lines are not recorded",
            interp.display()
        )),
        _ => Err(format!(
            "{} did not say its version ({})",
            interp.display(),
            out.status
        )),
    }
}

/// The interpreter a `#!` line names: its program, or `env`'s first argument looked up
/// on PATH.
fn shebang(program: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = crate::files::open(program).ok()?.read(&mut head).ok()?;
    let text = std::str::from_utf8(&head[..n]).ok()?;
    let line = text.strip_prefix("#!")?.lines().next()?;
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name().is_some_and(|n| n == "env") {
        let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        let path = std::env::var_os("PATH");
        super::spawn::resolve_program(name.as_ref(), path.as_deref()).ok()
    } else {
        Some(first)
    }
}

/// The recorder's private folder for one traced run: the bootstrap, and the records the
/// interpreter (and every Python process it starts) writes. Removed when dropped, with
/// the perf map files the interpreter's perf support made for the run's processes.
pub struct Recorder {
    dir: tempfile::TempDir,
    pids: Vec<u32>,
    /// With the interpreter's perf support on: the perf map files in /tmp before the
    /// run (by name), which are never removed. None: perf support off, nothing removed.
    maps_before: Option<std::collections::HashSet<OsString>>,
    /// The recorder's limit of records (ALLOCLAB_PYTHON_MAX_RECORDS, checked).
    max_records: Option<u64>,
}

/// The folder of the interpreter's perf map files.
const MAP_DIR: &str = "/tmp";

/// The perf map files (`perf-PID.map`) in `dir` now.
fn perf_maps(dir: &Path) -> std::collections::HashSet<OsString> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name())
                .filter(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with("perf-") && n.ends_with(".map")
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The line recorder's limit of records from `ALLOCLAB_PYTHON_MAX_RECORDS` (None: not
/// set, the recorder's default of 50 million), refused where it is not a whole number of
/// at least 1 (1e6, 1_000_000 and 2^20 are read as sizes are).
pub fn max_records_from_env() -> Result<Option<u64>, String> {
    max_records_of(std::env::var_os("ALLOCLAB_PYTHON_MAX_RECORDS").as_deref())
}

/// [`max_records_from_env`] of the variable's value.
fn max_records_of(value: Option<&std::ffi::OsStr>) -> Result<Option<u64>, String> {
    let Some(v) = value else {
        return Ok(None);
    };
    let text = v.to_string_lossy();
    crate::model::spec::parse_size(&text).map(Some).map_err(|_| {
        format!(
            "ALLOCLAB_PYTHON_MAX_RECORDS={text:?}: expected the line recorder's limit of records, a whole number of at least 1 (e.g. 50000000, the default, or 1e6); unset it for the default"
        )
    })
}

impl Recorder {
    /// A recorder for one traced run; `perf_frames`: the interpreter's perf support is
    /// on (its perf map files are noted now, to remove only those the run makes);
    /// `max_records`: the checked limit of records.
    pub fn new(perf_frames: bool, max_records: Option<u64>) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("alloclab-python-")
            .tempdir()
            .map_err(|e| format!("a folder for the line recorder could not be made: {e}"))?;
        std::fs::create_dir(dir.path().join("lines"))
            .and_then(|()| {
                std::fs::write(
                    dir.path().join("sitecustomize.py"),
                    crate::analysis::python::BOOTSTRAP,
                )
            })
            .map_err(|e| format!("the line recorder could not be written: {e}"))?;
        Ok(Recorder {
            dir,
            pids: Vec::new(),
            maps_before: perf_frames.then(|| perf_maps(Path::new(MAP_DIR))),
            max_records,
        })
    }

    /// Where the records are.
    pub fn lines(&self) -> PathBuf {
        self.dir.path().join("lines")
    }

    /// The traced run's extra environment: the recorder first on PYTHONPATH, its folder,
    /// its limit, and the interpreter's perf support where it was asked for.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        let mut path = OsString::from(self.dir.path());
        if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(old);
        }
        let mut env = vec![
            ("PYTHONPATH".into(), path),
            ("ALLOCLAB_PYTHON_LINES".into(), self.lines().into()),
        ];
        if let Some(n) = self.max_records {
            env.push(("ALLOCLAB_PYTHON_MAX_RECORDS".into(), n.to_string().into()));
        }
        if self.maps_before.is_some() {
            env.push(("PYTHONPERFSUPPORT".into(), "1".into()));
        }
        env
    }

    /// Processes of the run whose perf map files are removed at the end (once perf
    /// script has read them).
    pub fn forget_maps_of(&mut self, pids: impl IntoIterator<Item = u32>) {
        self.pids.extend(pids);
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // Every process that recorded, also of a run that failed or was interrupted.
        if let Ok(entries) = std::fs::read_dir(self.lines()) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = name
                    .strip_prefix("lines-")
                    .and_then(|r| r.strip_suffix(".bin"))
                    .and_then(|p| p.parse().ok())
                {
                    self.pids.push(pid);
                }
            }
        }
        let Some(before) = &self.maps_before else {
            return;
        };
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        for pid in &self.pids {
            use std::os::unix::fs::MetadataExt as _;
            let name = OsString::from(format!("perf-{pid}.map"));
            if before.contains(&name) {
                continue;
            }
            let map = Path::new(MAP_DIR).join(&name);
            // Only a plain file of this user's that appeared during the run.
            match std::fs::symlink_metadata(&map) {
                Ok(m) if m.is_file() && m.uid() == uid => {
                    let _ = std::fs::remove_file(map);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_names_its_interpreter_directly_or_through_env() {
        let dir = tempfile::tempdir().unwrap();
        let direct = dir.path().join("a.py");
        std::fs::write(&direct, "#!/opt/py/bin/python3.12 -u\nprint(1)\n").unwrap();
        assert_eq!(
            shebang(&direct),
            Some(PathBuf::from("/opt/py/bin/python3.12"))
        );
        let through = dir.path().join("b.py");
        std::fs::write(&through, "#!/usr/bin/env -S sh\n").unwrap();
        let sh = shebang(&through).unwrap();
        assert!(sh.ends_with("sh"), "{}", sh.display());
        let none = dir.path().join("c");
        std::fs::write(&none, "\x7fELF").unwrap();
        assert_eq!(shebang(&none), None);
    }

    #[test]
    fn a_program_that_is_not_python_is_not_asked() {
        assert!(detect(Path::new("/bin/true"), &["true".into()])
            .unwrap()
            .is_none());
        assert!(detect(
            Path::new("/usr/bin/env"),
            &["env".into(), "A=1".into(), "true".into()]
        )
        .unwrap()
        .is_none());
    }

    #[test]
    fn the_limit_of_records_is_a_whole_number_or_refused() {
        let of = |v: &str| max_records_of(Some(std::ffi::OsStr::new(v)));
        assert_eq!(max_records_of(None), Ok(None));
        assert_eq!(of("1e6"), Ok(Some(1_000_000)));
        assert_eq!(of("1_000"), Ok(Some(1000)));
        assert_eq!(of("50000000"), Ok(Some(50_000_000)));
        for bad in ["abc", "", "0", "-5", "1.5"] {
            let e = of(bad).unwrap_err();
            assert!(
                e.contains("ALLOCLAB_PYTHON_MAX_RECORDS") && e.contains("whole number"),
                "{bad}: {e}"
            );
        }
    }

    /// Only the perf map files the run made go, and only with the perf support on: a
    /// file of the same name that was there before (a process of another PID
    /// namespace) stays.
    #[test]
    fn only_perf_maps_the_run_made_are_removed() {
        // Pids no process has here.
        let (old, new) = (4_294_960_001u32, 4_294_960_002u32);
        let path = |pid: u32| Path::new(MAP_DIR).join(format!("perf-{pid}.map"));
        let _ = std::fs::remove_file(path(new));
        std::fs::write(path(old), "theirs\n").unwrap();
        let mut r = Recorder::new(true, None).unwrap();
        assert!(r.env().iter().any(|(k, _)| k == "PYTHONPERFSUPPORT"));
        std::fs::write(path(new), "ours\n").unwrap();
        r.forget_maps_of([old, new]);
        drop(r);
        assert!(
            path(old).is_file(),
            "a map that was there before the run stays"
        );
        assert!(!path(new).exists(), "a map the run made goes");
        // Without the perf support nothing is removed.
        std::fs::write(path(new), "ours\n").unwrap();
        let mut r = Recorder::new(false, None).unwrap();
        r.forget_maps_of([new]);
        drop(r);
        assert!(path(new).is_file());
        std::fs::remove_file(path(old)).unwrap();
        std::fs::remove_file(path(new)).unwrap();
    }

    #[test]
    fn the_recorder_comes_first_on_pythonpath_and_its_folder_goes_when_dropped() {
        let r = Recorder::new(false, Some(1000)).unwrap();
        let dir = r.dir.path().to_path_buf();
        assert!(dir.join("sitecustomize.py").is_file());
        let env = r.env();
        assert!(env
            .iter()
            .any(|(k, v)| k == "ALLOCLAB_PYTHON_MAX_RECORDS" && v == "1000"));
        assert!(!env.iter().any(|(k, _)| k == "PYTHONPERFSUPPORT"));
        let path = &env.iter().find(|(k, _)| k == "PYTHONPATH").unwrap().1;
        assert!(path.to_string_lossy().starts_with(&*dir.to_string_lossy()));
        drop(r);
        assert!(!dir.exists());
    }
}
