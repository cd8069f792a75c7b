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
//! whole when the run is done, and the perf map files removed are the interpreter's,
//! named by the pids of the traced run's own Python processes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A CPython interpreter found behind a command.
#[derive(Clone, Debug)]
pub struct Interpreter {
    pub path: PathBuf,
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
    let n = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
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
/// the perf map files the interpreter's perf support left for the run's processes.
pub struct Recorder {
    dir: tempfile::TempDir,
    pids: Vec<u32>,
}

impl Recorder {
    pub fn new() -> Result<Self, String> {
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
        })
    }

    /// Where the records are.
    pub fn lines(&self) -> PathBuf {
        self.dir.path().join("lines")
    }

    /// The traced run's extra environment; with `perf_frames`, the interpreter's perf
    /// support too.
    pub fn env(&self, perf_frames: bool) -> Vec<(OsString, OsString)> {
        let mut path = OsString::from(self.dir.path());
        if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(old);
        }
        let mut env = vec![
            ("PYTHONPATH".into(), path),
            ("ALLOCLAB_PYTHON_LINES".into(), self.lines().into()),
        ];
        if perf_frames {
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
        for pid in &self.pids {
            let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
            let _ = std::fs::remove_file(map);
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
    fn the_recorder_comes_first_on_pythonpath_and_its_folder_goes_when_dropped() {
        let r = Recorder::new().unwrap();
        let dir = r.dir.path().to_path_buf();
        assert!(dir.join("sitecustomize.py").is_file());
        let env = r.env(false);
        let path = &env.iter().find(|(k, _)| k == "PYTHONPATH").unwrap().1;
        assert!(path.to_string_lossy().starts_with(&*dir.to_string_lossy()));
        drop(r);
        assert!(!dir.exists());
    }
}
