//! The one spawn path, for lab workers and users' commands alike: fork, attach the
//! counters to the child while it waits, let it exec, wait for it with `wait4` (its own
//! rusage, not the cumulative RUSAGE_CHILDREN) under a timeout and the Ctrl-C flag, read
//! the counters, then kill its process group and sweep every descendant it left (the
//! driver is their subreaper, see [`crate::engine::begin`]).
//!
//! `std::process::Command` cannot be used here: `spawn` returns only after the child has
//! exec'd, and the counters must be attached before that. The child therefore blocks on a
//! pipe until the parent has opened them (with `enable_on_exec`, so counting starts at the
//! exec, as `perf stat` does); between fork and exec it only makes async-signal-safe calls
//! on data prepared beforehand.

use crate::counters::linux::perf::{SyscallCounters, SyscallCounts};
use crate::counters::linux::ptrace;
use crate::counters::rusage::Rusage;
use crate::counters::Unavailable;
use crate::model::memory::MemorySample;
use serde::{Deserialize, Serialize};
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A command with its exact environment, converted once for every run of it.
pub struct Prepared {
    program: CString,
    /// The parent-death signal of the child: SIGKILL, but SIGTERM for perf (see
    /// [`crate::engine::lifetime::die_with_parent_by`]).
    death_signal: libc::c_int,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
}

/// Why a command could not be prepared or started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// An argument, the program's path or an environment entry holds a NUL byte (the value,
    /// quoted).
    #[error("{0} contains a NUL byte")]
    Nul(String),
    /// execve of the program failed.
    #[error("cannot start {program}: {error}")]
    Exec {
        /// The program's path.
        program: String,
        /// The error execve returned.
        error: String,
    },
    /// Setting up the run failed (a pipe, fork, the counters, the tracer): what, and why.
    #[error("{0}")]
    Setup(String),
}

fn cstring(s: &OsStr) -> Result<CString, LaunchError> {
    CString::new(s.as_bytes()).map_err(|_| LaunchError::Nul(format!("{s:?}")))
}

impl Prepared {
    /// `program` is the resolved executable, `argv` the full argument vector (argv[0]
    /// included), `env` the complete environment of the child.
    pub fn new(
        program: &Path,
        argv: &[OsString],
        env: &[(OsString, OsString)],
    ) -> Result<Self, LaunchError> {
        let death_signal = if program.file_name() == Some(OsStr::new("perf")) {
            libc::SIGTERM
        } else {
            libc::SIGKILL
        };
        let program = cstring(program.as_os_str())?;
        let argv: Vec<CString> = argv.iter().map(|a| cstring(a)).collect::<Result<_, _>>()?;
        let envp: Vec<CString> = env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.clone();
                kv.push("=");
                kv.push(v);
                cstring(&kv)
            })
            .collect::<Result<_, _>>()?;
        Ok(Prepared {
            program,
            death_signal,
            argv_ptrs: nul_terminated(&argv),
            _argv: argv,
            envp_ptrs: nul_terminated(&envp),
            _envp: envp,
        })
    }
}

impl Prepared {
    /// The same command with `extra` more bytes in its layout padding variable
    /// ([`crate::model::layout::PAD_ENV`], added where it has none): one draw of a run's
    /// stack offset.
    pub fn padded(&self, extra: u32) -> Prepared {
        let name = format!("{}=", crate::model::layout::PAD_ENV);
        let mut envp: Vec<CString> = self._envp.clone();
        let mut value: Vec<u8> = match envp
            .iter()
            .position(|e| e.as_bytes().starts_with(name.as_bytes()))
        {
            Some(i) => envp.remove(i).into_bytes(),
            None => name.into_bytes(),
        };
        value.extend(std::iter::repeat_n(b'x', extra as usize));
        // The name and 'x's hold no NUL.
        envp.push(CString::new(value).unwrap_or_default());
        let argv = self._argv.clone();
        Prepared {
            program: self.program.clone(),
            death_signal: self.death_signal,
            argv_ptrs: nul_terminated(&argv),
            _argv: argv,
            envp_ptrs: nul_terminated(&envp),
            _envp: envp,
        }
    }
}

/// The pointers of `v` and a NULL after them: what execve takes.
fn nul_terminated(v: &[CString]) -> Vec<*const libc::c_char> {
    v.iter()
        .map(|c| c.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Finds `name` like execvp does: as given when it contains a '/', else in `PATH`.
pub fn resolve_program(name: &OsStr, path_var: Option<&OsStr>) -> Result<PathBuf, String> {
    let is_exec = |p: &Path| {
        let Ok(c) = CString::new(p.as_os_str().as_bytes()) else {
            return false;
        };
        // SAFETY: `c` is a valid NUL-terminated path.
        p.is_file() && unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0
    };
    if name.as_bytes().contains(&b'/') {
        let p = PathBuf::from(name);
        return if !p.exists() {
            Err(format!("{} does not exist", p.display()))
        } else if !is_exec(&p) {
            Err(format!("{} is not an executable file", p.display()))
        } else {
            Ok(p)
        };
    }
    let path_var = path_var.unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(path_var)
        .map(|dir| dir.join(name))
        .find(|p| is_exec(p))
        .ok_or_else(|| {
            format!(
                "command not found: {} (searched PATH={})",
                name.to_string_lossy(),
                path_var.to_string_lossy()
            )
        })
}

/// Why `LD_PRELOAD` cannot replace the malloc of `program` (a statically linked ELF
/// executable has no dynamic loader to preload with; a set-user-ID program runs in secure
/// mode, which ignores preload paths), or None where it can. A script (`#!`) is judged by
/// its interpreter.
pub fn preload_obstacle(program: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let mut head = [0u8; 256];
    let n = crate::files::open(program)
        .and_then(|mut f| f.read(&mut head))
        .ok()?;
    let head = &head[..n];
    if let Some(rest) = head.strip_prefix(b"#!") {
        let line = rest.split(|&b| b == b'\n').next()?;
        let interp = String::from_utf8_lossy(line);
        let interp = interp.split_whitespace().next()?;
        return preload_obstacle(Path::new(interp))
            .map(|why| format!("its interpreter {interp}: {why}"));
    }
    let mode = std::fs::metadata(program).ok()?.permissions().mode();
    // SAFETY: geteuid has no preconditions.
    if mode & 0o4000 != 0 && unsafe { libc::geteuid() } != 0 {
        return Some(format!(
            "{} is set-user-ID: the loader ignores LD_PRELOAD paths for it",
            program.display()
        ));
    }
    // ELF64 little-endian (x86_64): look for a PT_INTERP program header.
    if n < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([head[o], head[o + 1]]) as u64;
    let phoff = u64::from_le_bytes(head[0x20..0x28].try_into().ok()?);
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    let mut table = vec![0u8; (phentsize * phnum) as usize];
    let mut f = crate::files::open(program).ok()?;
    std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut table).ok()?;
    const PT_INTERP: u32 = 3;
    let has_interp = table
        .chunks_exact(phentsize.max(4) as usize)
        .any(|ph| u32::from_le_bytes([ph[0], ph[1], ph[2], ph[3]]) == PT_INTERP);
    (!has_interp).then(|| {
        format!(
            "{} is statically linked: there is no dynamic loader to preload an allocator with",
            program.display()
        )
    })
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Termination {
    /// The command exited by itself.
    Exited {
        /// Its exit status.
        code: i32,
    },
    /// A signal killed it (not the lab's kill after a timeout or Ctrl-C).
    Signaled {
        /// The signal's number.
        signal: i32,
        /// Whether it dumped core.
        core_dumped: bool,
    },
    /// Killed by alloclab after the timeout.
    TimedOut,
    /// Killed by alloclab after Ctrl-C / SIGTERM.
    Interrupted,
}

impl Termination {
    /// Whether the run exited with status 0.
    pub fn success(&self) -> bool {
        *self == Termination::Exited { code: 0 }
    }

    /// How the run ended, as the end of a sentence about it ("exited with status 1"); `timeout`
    /// is the limit that was in force, for a timed-out run.
    pub fn describe(&self, timeout: Option<Duration>) -> String {
        match *self {
            Termination::Exited { code } => format!("exited with status {code}"),
            Termination::Signaled {
                signal,
                core_dumped,
            } => format!(
                "was killed by signal {signal} ({}){}",
                crate::engine::signal_name(signal),
                if core_dumped { ", core dumped" } else { "" }
            ),
            Termination::TimedOut => match timeout {
                Some(t) => format!("timed out after {} s and was killed", t.as_secs_f64()),
                None => "timed out and was killed".into(),
            },
            Termination::Interrupted => "was interrupted (Ctrl-C) and killed".into(),
        }
    }
}

/// One run, measured.
#[derive(Clone, Debug)]
pub struct ChildRun {
    /// From just before the child is released to exec until `wait4` has reaped it.
    pub wall_ns: u64,
    /// When that span began, on the wall clock (ns since the Unix epoch).
    pub start_unix_ns: Option<u64>,
    /// How it ended.
    pub termination: Termination,
    /// `wait4`'s rusage of this child (and of the descendants it waited for).
    pub usage: Rusage,
    /// Its syscall counts, or why there are none (counting off, or the counters failed).
    pub syscalls: Result<SyscallCounts, Unavailable>,
    /// The end of what the command wrote to stderr (None with `--show-output`, where it
    /// went to the terminal).
    pub stderr_tail: Option<String>,
    /// Everything it wrote to stdout, with [`LaunchOptions::capture_stdout`].
    pub stdout: Option<String>,
    /// A traced worker's memory syscalls in its measured phase, with their times.
    pub calls: Vec<ptrace::TrappedCall>,
    /// Phase markers seen by the tracer (a traced worker makes two; 0 otherwise).
    pub markers: u32,
    /// When the tracer saw them (CLOCK_MONOTONIC).
    pub phase_ns: (Option<u64>, Option<u64>),
    /// With [`LaunchOptions::record_faults`]: every page fault with its address, or why
    /// none were recorded.
    pub faults: Option<Result<crate::counters::linux::faults::FaultLog, Unavailable>>,
    /// Its memory sampled from outside while it ran ([`LaunchOptions::memory_every`]), in
    /// time order, or why there are no samples.
    pub memory: Result<Vec<MemorySample>, Unavailable>,
    /// When it first wrote to [`MARK_FD`] (its burst over), in ms on the samples' clock;
    /// None where it did not (or was not given the descriptor).
    pub mark_ms: Option<f64>,
}

/// What a run does besides executing the command.
#[derive(Clone, Copy, Debug)]
pub struct LaunchOptions {
    /// Leave the child's stdout and stderr on the terminal; otherwise its stdout is discarded
    /// (unless captured) and the tail of its stderr kept ([`ChildRun::stderr_tail`]).
    pub show_output: bool,
    /// Disable transparent huge pages for the child (PR_SET_THP_DISABLE, kept across exec).
    pub thp_never: bool,
    /// Kill the child's process group after this long; None: no limit.
    pub timeout: Option<Duration>,
    /// Attach syscall counters (perf tracepoints) to the child.
    pub count_syscalls: bool,
    /// With `count_syscalls`: the child's program is a launcher (`perf record`) that
    /// runs the command as its child. Its own thread's calls are counted apart and left
    /// out, so that [`ChildRun::syscalls`] holds what the command's tree did (a launcher
    /// thread of its own would be counted with the command).
    pub launcher_apart: bool,
    /// Count memory syscalls with ptrace + seccomp instead (no privileges needed; the run
    /// is slowed by every trapped call, so its time is not used): a command's whole
    /// process tree, or a worker's calls between its phase markers.
    pub trace: Option<ptrace::Scope>,
    /// Keep the child's stdout (a worker's JSON record) instead of discarding it.
    pub capture_stdout: bool,
    /// With `trace`: which trapped calls to keep with their times ([`ChildRun::calls`]).
    pub log: ptrace::Log,
    /// Record every page fault of the child's tree with its address and time
    /// ([`ChildRun::faults`]): the evidence run's.
    pub record_faults: bool,
    /// Sample the child's memory (/proc/<pid>/smaps_rollup) this often while waiting for
    /// it; None: not sampled.
    pub memory_every: Option<Duration>,
    /// With `memory_every`: give the child descriptor [`MARK_FD`], a pipe it may write
    /// to when its burst is over ([`ChildRun::mark_ms`]: when it did, on the samples'
    /// clock), so that what it gives back afterwards is measured as a worker's idle.
    pub mark: bool,
}

/// The descriptor a command under `exec` may write a byte to when its burst is over
/// (named to it in [`MARK_ENV`]); the samples after it are its idle phase. High, so as
/// not to meet a descriptor the program opens itself.
pub const MARK_FD: libc::c_int = 200;

/// The environment variable that names [`MARK_FD`] to the command.
pub const MARK_ENV: &str = "ALLOCLAB_MARK_FD";

/// How often a worker's or a command's memory is sampled unless
/// `ALLOCLAB_MEMORY_EVERY_MS` says otherwise.
pub const MEMORY_EVERY_MS: u64 = 10;

/// How often a sample reads smaps_rollup (huge pages, Pss, LazyFree) rather than statm:
/// it walks the process's page tables under its mmap lock, about 0.3–0.5 ms for 30 MiB,
/// so it is kept to one read in 100 ms (under 0.5 % of the process's time).
pub const FULL_SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The variable that sets the memory sampling step.
pub const MEMORY_EVERY_ENV: &str = "ALLOCLAB_MEMORY_EVERY_MS";

/// `ALLOCLAB_MEMORY_EVERY_MS` as given: its step in ms (0: off), [`MEMORY_EVERY_MS`]
/// where unset, or what is wrong with it.
pub fn memory_every_setting() -> Result<u64, String> {
    match std::env::var(MEMORY_EVERY_ENV) {
        Err(_) => Ok(MEMORY_EVERY_MS),
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| *ms <= 60_000)
            .ok_or_else(|| {
                format!(
                    "{MEMORY_EVERY_ENV}={v:?} is not a sampling step: give whole milliseconds from 1 to 60000, or 0 to turn memory sampling off"
                )
            }),
    }
}

/// The memory sampling step: `ALLOCLAB_MEMORY_EVERY_MS` (0 turns sampling off), else
/// [`MEMORY_EVERY_MS`] (a bad value is refused before any run, by the commands).
pub fn memory_every() -> Option<Duration> {
    let ms = memory_every_setting().unwrap_or(MEMORY_EVERY_MS);
    (ms > 0).then(|| Duration::from_millis(ms))
}

/// Samples a child's memory from the driver while it waits for the child: the child
/// itself (not its children), read from /proc at a fixed step that doubles whenever the
/// samples kept reach [`crate::model::memory::MAX_SAMPLES`].
struct Sampler {
    pid: libc::pid_t,
    start: Instant,
    every: Duration,
    next: Instant,
    /// When the next full sample (smaps_rollup: huge pages, Pss) is due; the others read
    /// statm, whose cost is the kernel's counters only.
    next_full: Instant,
    samples: Vec<MemorySample>,
    error: Option<String>,
    gone: bool,
    buf: Vec<u8>,
}

impl Sampler {
    fn new(pid: libc::pid_t, start: Instant, every: Duration) -> Self {
        Sampler {
            pid,
            start,
            every,
            next: start,
            next_full: start,
            samples: Vec::with_capacity(256),
            error: None,
            gone: false,
            buf: vec![0; 8192],
        }
    }

    /// Takes a sample if one is due.
    fn tick(&mut self) {
        let now = Instant::now();
        if self.gone || self.error.is_some() || now < self.next {
            return;
        }
        let t_ms = now.duration_since(self.start).as_secs_f64() * 1e3;
        let full = now >= self.next_full;
        if full {
            self.next_full = now + FULL_SAMPLE_EVERY.max(self.every);
        }
        match crate::counters::memory::sample_of(self.pid, t_ms, &mut self.buf, full) {
            Ok(Some(x)) => {
                if crate::model::memory::keep(&mut self.samples, x) {
                    self.every *= 2;
                }
            }
            Ok(None) => self.gone = true,
            Err(e) => self.error = Some(e),
        }
        self.next = now + self.every;
    }

    /// How long until the next sample, in ms (at least 1); no limit once sampling has
    /// ended (the process gone, or its files unreadable).
    fn wait_ms(&self) -> i32 {
        if self.gone || self.error.is_some() {
            return i32::MAX;
        }
        let left = self.next.saturating_duration_since(Instant::now());
        (left.as_millis() as i32).max(1)
    }

    fn finish(self) -> Result<Vec<MemorySample>, Unavailable> {
        match self.error {
            Some(e) => Err(Unavailable(e)),
            None if self.samples.is_empty() => Err(Unavailable(
                "the process ended before its memory was first sampled".into(),
            )),
            None => Ok(self.samples),
        }
    }
}

/// Marks an errno from the child's tracer set-up (rather than from execve).
const TRACER_SETUP_FAILED: i32 = 1 << 24;

fn pipe_cloexec() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 returns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn kill_group(pgid: libc::pid_t) {
    // SAFETY: kill takes plain integers; ESRCH (nobody left) is fine.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

fn wait4(pid: libc::pid_t) -> std::io::Result<(libc::c_int, libc::rusage)> {
    let mut status = 0;
    // SAFETY: all-zero bytes are a valid rusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are writable; `pid` is our child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return Ok((status, ru));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Runs `cmd` once. `Err` means it could not be started (the reason is for the row);
/// how it ended once started is in [`ChildRun::termination`].
pub fn run(cmd: &Prepared, opts: &LaunchOptions) -> Result<ChildRun, LaunchError> {
    run_announced(cmd, opts, &|_, _| {})
}

/// As [`run`], telling `announce` the child's pid and the instant its span began (just
/// before it is released to exec), from the thread that waits for it: what a caller
/// driving a server from another thread needs to read `/proc/<pid>` and to stop it.
pub fn run_announced(
    cmd: &Prepared,
    opts: &LaunchOptions,
    announce: &(dyn Fn(libc::pid_t, Instant) + Sync),
) -> Result<ChildRun, LaunchError> {
    let setup = |what: &str, e: std::io::Error| LaunchError::Setup(format!("{what}: {e}"));
    // The child's stdin (and its discarded output): a device, not a file of the results
    // folder, so not the folder writer's.
    let devnull = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|e| setup("opening /dev/null", e))?;
    let (go_r, go_w) = pipe_cloexec().map_err(|e| setup("pipe", e))?;
    let (err_r, err_w) = pipe_cloexec().map_err(|e| setup("pipe", e))?;
    // The child's own rusage just before its execve: subtracted from wait4's, so that
    // faults, context switches and CPU time count from the exec on (as perf's counters,
    // enabled on exec, do) and not the forked copy of this process before it.
    let (pre_r, pre_w) = pipe_cloexec().map_err(|e| setup("pipe", e))?;
    let pre_fd = pre_w.as_raw_fd();
    let null_fd = devnull.as_raw_fd();
    let (go_fd, err_fd) = (go_r.as_raw_fd(), err_w.as_raw_fd());
    // The command's stderr, when not shown, goes to a pipe whose last lines are kept for
    // the row of a failed run.
    let stderr_pipe = if opts.show_output {
        None
    } else {
        Some(pipe_cloexec().map_err(|e| setup("pipe", e))?)
    };
    let stderr_fd = stderr_pipe.as_ref().map_or(null_fd, |(_, w)| w.as_raw_fd());
    // perf (parent-death signal SIGTERM) must outlive a killed driver long enough to end
    // the program it records: it then writes to its stderr, which would raise SIGPIPE and
    // kill it first if the driver had held the pipe's only read end. So perf keeps a read
    // end of its own (the pipe's reader here is unaffected: it ends when the writers do).
    let stderr_reader_kept = (cmd.death_signal != libc::SIGKILL)
        .then(|| stderr_pipe.as_ref().map(|(r, _)| r.as_raw_fd()))
        .flatten();
    let filter = match opts.trace {
        Some(scope) => {
            if let Some(why) = ptrace::unsupported() {
                return Err(LaunchError::Setup(why.0));
            }
            Some(ptrace::Filter::new(scope))
        }
        None => None,
    };
    let stdout_pipe = if opts.capture_stdout {
        Some(pipe_cloexec().map_err(|e| setup("pipe", e))?)
    } else {
        None
    };
    let stdout_fd = stdout_pipe.as_ref().map_or(null_fd, |(_, w)| w.as_raw_fd());
    // The pipe the command may mark the end of its burst on (sampled runs only).
    // Given whenever asked for, sampled or not, so that a command that writes to it
    // never fails for it; its read end stays open until the command is gone.
    let mark_pipe = if opts.mark {
        let (r, w) = pipe_cloexec().map_err(|e| setup("pipe", e))?;
        // SAFETY: plain fcntl on a descriptor we own.
        unsafe {
            let flags = libc::fcntl(r.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(r.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Some((r, w))
    } else {
        None
    };
    let mark_fd = mark_pipe.as_ref().map(|(_, w)| w.as_raw_fd());

    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child below only makes async-signal-safe calls (setpgid, signal,
    // sigprocmask, prctl, getppid, read, dup2, getrusage, execve, write, _exit) on data
    // prepared before the fork (or on its own stack), and never returns. Before them it
    // only releases its copy of the live-children registry's lock (an atomic store and
    // at most a futex wake: no allocation), which the parent held across the fork.
    let (pid, _live) = crate::engine::lifetime::fork_registered(|| unsafe { libc::fork() });
    if pid < 0 {
        return Err(setup("fork", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: see above; every pointer is to memory prepared before the fork.
        unsafe {
            crate::engine::lifetime::die_with_parent_by(parent, cmd.death_signal);
            libc::setpgid(0, 0);
            // Rust ignores SIGPIPE; an ignored signal stays ignored across exec.
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            if opts.thp_never {
                libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
            }
            let mut byte = 0u8;
            if libc::read(go_fd, (&mut byte as *mut u8).cast(), 1) != 1 {
                libc::_exit(127);
            }
            libc::dup2(null_fd, 0);
            if opts.capture_stdout {
                libc::dup2(stdout_fd, 1);
            } else if !opts.show_output {
                libc::dup2(null_fd, 1);
            }
            if !opts.show_output {
                libc::dup2(stderr_fd, 2);
            }
            if let Some(fd) = stderr_reader_kept {
                libc::fcntl(fd, libc::F_SETFD, 0);
            }
            // dup2 leaves the new descriptor open across the exec.
            if let Some(fd) = mark_fd {
                libc::dup2(fd, MARK_FD);
            }
            // Traced: stop at the exec for the tracer; from then on every memory syscall
            // of this process and of everything it starts traps to the tracer.
            if let Some(Err(errno)) = filter.as_ref().map(|f| f.install_in_child()) {
                let code = errno | TRACER_SETUP_FAILED;
                libc::write(err_fd, (&code as *const i32).cast(), 4);
                libc::_exit(127);
            }
            let mut before: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut before);
            libc::write(
                pre_fd,
                (&before as *const libc::rusage).cast(),
                std::mem::size_of::<libc::rusage>(),
            );
            libc::execve(
                cmd.program.as_ptr(),
                cmd.argv_ptrs.as_ptr(),
                cmd.envp_ptrs.as_ptr(),
            );
            let errno = *libc::__errno_location();
            libc::write(err_fd, (&errno as *const i32).cast(), 4);
            libc::_exit(127);
        }
    }
    drop(go_r);
    drop(err_w);
    drop(pre_w);
    // The command holds the only write end of its mark pipe: it ends when the command does.
    // Its read end is drained for the command's whole life, whatever else watches it (the
    // sampler, the ptrace tracer, or nothing), so that no write of the command's blocks.
    let mark_drain = mark_pipe.map(|(r, _w)| MarkDrain::start(r));
    // Both sides set the group, so it exists whichever runs first (and kill_group reaches
    // the child from here on).
    // SAFETY: plain integers.
    unsafe { libc::setpgid(pid, pid) };
    // The pipes' readers: a thread each. One that cannot be started (a process limit)
    // fails the launch, and the child, still waiting to be released, goes.
    let reader = |f: Box<dyn FnOnce() + Send>| std::thread::Builder::new().spawn(f).map(drop);
    let stderr_tail = stderr_pipe
        .map(|(r, w)| {
            drop(w);
            let (tx, rx) = std::sync::mpsc::channel();
            reader(Box::new(move || {
                let _ = tx.send(keep_tail(std::fs::File::from(r), STDERR_TAIL_BYTES));
            }))
            .map(|()| rx)
        })
        .transpose();
    let stdout = stdout_pipe
        .map(|(r, w)| {
            drop(w);
            let (tx, rx) = std::sync::mpsc::channel();
            reader(Box::new(move || {
                let mut text = String::new();
                let _ = std::io::Read::read_to_string(&mut std::fs::File::from(r), &mut text);
                let _ = tx.send(text);
            }))
            .map(|()| rx)
        })
        .transpose();
    let (stderr_tail, stdout) = match (stderr_tail, stdout) {
        (Ok(e), Ok(o)) => (e, o),
        (Err(e), _) | (_, Err(e)) => {
            kill_group(pid);
            let _ = wait4(pid);
            return Err(setup("starting a thread to read the child's output", e));
        }
    };
    drop(devnull);

    let counters = if opts.count_syscalls && opts.trace.is_none() {
        let launcher = || {
            opts.launcher_apart
                .then(|| SyscallCounters::open_for_exec_thread(pid))
                .transpose()
        };
        match SyscallCounters::open_for_exec(pid).and_then(|c| Ok((c, launcher()?))) {
            Ok(c) => Some(c),
            Err(why) => {
                kill_group(pid);
                let _ = wait4(pid);
                return Err(LaunchError::Setup(format!(
                    "attaching the syscall counters failed: {why}"
                )));
            }
        }
    } else {
        None
    };

    let fault_recorder = opts
        .record_faults
        .then(|| crate::counters::linux::faults::FaultRecorder::open(pid));

    let start = Instant::now();
    let start_unix_ns = crate::counters::unix_now_ns();
    announce(pid, start);
    // SAFETY: writes one byte from a live buffer to our end of the pipe.
    let wrote = unsafe { libc::write(go_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    drop(go_w);
    if wrote != 1 {
        let e = std::io::Error::last_os_error();
        kill_group(pid);
        let _ = wait4(pid);
        return Err(setup("releasing the child", e));
    }
    let mut errno = [0u8; 4];
    let n = loop {
        // SAFETY: reads at most 4 bytes into `errno`.
        let n = unsafe { libc::read(err_r.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
        if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break n;
        }
    };
    if n == 4 {
        let _ = wait4(pid);
        let code = i32::from_ne_bytes(errno);
        let error = std::io::Error::from_raw_os_error(code & !TRACER_SETUP_FAILED);
        return Err(if code & TRACER_SETUP_FAILED != 0 {
            LaunchError::Setup(format!(
                "setting up the tracer in the child (PTRACE_TRACEME, no_new_privs, seccomp) failed: {error}"
            ))
        } else {
            LaunchError::Exec {
                program: cmd.program.to_string_lossy().into_owned(),
                error: error.to_string(),
            }
        });
    }

    let mut memory = Err(Unavailable(
        "not sampled under the ptrace tracer (a traced run's figures are its calls)".into(),
    ));
    let (forced, status, ru, traced, markers, calls, phase_ns) = if let Some(scope) = opts.trace {
        let watch = ptrace::Watch {
            kill: -pid,
            timeout: opts.timeout,
            interrupted: Some(crate::ui::interrupt::interrupted),
        };
        let t = ptrace::trace(pid, scope, watch, opts.log)
            .map_err(|e| setup("tracing the child", e))?;
        let forced = t.forced.map(|f| match f {
            ptrace::Forced::TimedOut => Termination::TimedOut,
            ptrace::Forced::Interrupted => Termination::Interrupted,
        });
        (
            forced,
            t.status,
            t.rusage,
            Some(t.counts),
            t.markers,
            t.calls,
            t.phase_ns,
        )
    } else {
        let mut sampler = opts
            .memory_every
            .map(|every| Sampler::new(pid, start, every));
        let forced = wait_for_exit(pid, opts.timeout, sampler.as_mut());
        memory = match sampler {
            Some(s) => s.finish(),
            None => Err(Unavailable("memory sampling is off".into())),
        };
        let (status, ru) = wait4(pid).map_err(|e| setup("wait4", e))?;
        (forced, status, ru, None, 0, Vec::new(), (None, None))
    };
    let wall_ns = start.elapsed().as_nanos() as u64;
    // Whatever the command left running does not outlive its run: its process group,
    // and (exec being their subreaper) descendants that left the group or the session.
    kill_group(pid);
    crate::engine::lifetime::kill_leftovers();
    // Everything that held the pipe is gone now; a descendant that escaped (no subreaper
    // here) would hold it open, so the tail is not waited for long.
    let stderr_tail = stderr_tail.and_then(|rx| rx.recv_timeout(Duration::from_secs(1)).ok());
    // Every writer of the stdout pipe is gone now (the sweep above), so it ends; one that
    // escaped the sweep is not waited for long.
    let stdout = stdout.map(|rx| rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default());

    let termination = match forced {
        Some(t) => t,
        None if libc::WIFEXITED(status) => Termination::Exited {
            code: libc::WEXITSTATUS(status),
        },
        None => Termination::Signaled {
            signal: libc::WTERMSIG(status),
            core_dumped: libc::WCOREDUMP(status),
        },
    };
    // What the child had used before its execve (written just before it): not the
    // command's. A child that never got there wrote nothing, and nothing is subtracted.
    // SAFETY: all-zero is a valid rusage (a plain C struct of integers).
    let mut before: libc::rusage = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::rusage>();
    // SAFETY: reads at most `size` bytes into `before`, a plain C struct.
    let got = unsafe {
        libc::read(
            pre_r.as_raw_fd(),
            (&mut before as *mut libc::rusage).cast(),
            size,
        )
    };
    let usage = if got == size as isize {
        Rusage::from_libc(&ru).since(&Rusage::from_libc(&before))
    } else {
        Rusage::from_libc(&ru)
    };
    let syscalls = match (traced, counters) {
        (Some(counts), _) => Ok(counts),
        (None, Some((mut c, None))) => c.read(),
        (None, Some((mut c, Some(mut launcher)))) => {
            c.read().and_then(|all| Ok(all.less(&launcher.read()?)))
        }
        (None, None) => Err(Unavailable("syscall counting is off".into())),
    };
    // Drained to here: the command and everything it left are gone.
    let mark_ms = mark_drain.and_then(|d| d.finish(start));
    let faults = fault_recorder.map(|r| r.and_then(|r| r.finish()));
    Ok(ChildRun {
        wall_ns,
        start_unix_ns,
        termination,
        usage,
        syscalls,
        stderr_tail,
        stdout,
        calls,
        markers,
        phase_ns,
        faults,
        memory,
        mark_ms,
    })
}

/// How much of a command's stderr is kept for its row.
const STDERR_TAIL_BYTES: usize = 4096;

/// Reads `from` to its end, keeping only the last `keep` bytes, as text.
fn keep_tail(mut from: impl std::io::Read, keep: usize) -> String {
    let mut tail: std::collections::VecDeque<u8> = std::collections::VecDeque::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        tail.extend(&buf[..n]);
        let excess = tail.len().saturating_sub(keep);
        tail.drain(..excess);
    }
    crate::fmt::printable(&String::from_utf8_lossy(tail.make_contiguous()))
}

/// The longest a wait for a process goes without looking at the Ctrl-C flag, in ms: how
/// late at most Ctrl-C stops a run (20 wake-ups a second of the driver, which sleeps
/// beside the measured process).
const FLAG_CHECK_MS: i32 = 50;

/// The reader of a command's [`MARK_FD`] pipe: a thread that empties it for the command's
/// whole life, so that a command may write to it as often as it likes and never blocks on
/// a full pipe (64 KiB), and that stamps when the first byte came.
struct MarkDrain {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Option<Instant>>,
}

impl MarkDrain {
    /// How often the thread looks at its stop flag while the pipe is quiet.
    const LOOK_MS: i32 = 50;

    /// Starts draining `read_end` (non-blocking).
    fn start(read_end: OwnedFd) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut first = None;
            let mut buf = [0u8; 4096];
            let fd = read_end.as_raw_fd();
            loop {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut p, 1, Self::LOOK_MS) };
                // Everything written so far, then the end or the flag.
                loop {
                    // SAFETY: reads at most `buf.len()` bytes into `buf` from a
                    // descriptor this thread owns.
                    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                    if n > 0 {
                        first.get_or_insert_with(Instant::now);
                        continue;
                    }
                    if n == 0 {
                        // Every writer is gone: nothing more can come.
                        return first;
                    }
                    break;
                }
                if flag.load(Ordering::Relaxed) {
                    return first;
                }
            }
        });
        MarkDrain { stop, thread }
    }

    /// Stops the draining (the command and everything it left are gone) and says when the
    /// first byte came, in ms since `start`.
    fn finish(self, start: Instant) -> Option<f64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let first = self.thread.join().ok().flatten()?;
        Some(first.saturating_duration_since(start).as_secs_f64() * 1e3)
    }
}

/// Waits until `pid` has exited (without reaping it), killing its process group on
/// timeout or Ctrl-C; says which of those happened. Uses a pidfd so that the wait can
/// time out and be interrupted; where pidfds are missing (Linux < 5.3) it blocks in
/// `waitid(WNOWAIT)` and cannot time out. With a `sampler`, wakes up when a sample is due
/// and takes it (not where pidfds are missing).
fn wait_for_exit(
    pid: libc::pid_t,
    timeout: Option<Duration>,
    mut sampler: Option<&mut Sampler>,
) -> Option<Termination> {
    // SAFETY: pidfd_open takes a pid and flags; the result is checked.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        if let Some(s) = sampler {
            s.error = Some("no pidfd to wait on while sampling (Linux before 5.3)".into());
        }
        // SAFETY: all-zero is a valid siginfo_t; WNOWAIT leaves the child for wait4.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: `info` is writable; `pid` is our child.
            let r = unsafe {
                libc::waitid(
                    libc::P_PID,
                    pid as libc::id_t,
                    &mut info,
                    libc::WEXITED | libc::WNOWAIT,
                )
            };
            if r == 0 {
                return None;
            }
            if crate::ui::interrupt::interrupted() {
                kill_group(pid);
                return Some(Termination::Interrupted);
            }
        }
    }
    // SAFETY: `pidfd` is a fresh descriptor owned by nothing else.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        // The flag is looked at before each wait, and no wait is longer than
        // FLAG_CHECK_MS: Ctrl-C may come before the poll starts, or be handled by another
        // of the driver's threads (a pipe reader), and then wakes no poll here.
        if crate::ui::interrupt::interrupted() {
            kill_group(pid);
            return Some(Termination::Interrupted);
        }
        if let Some(s) = sampler.as_deref_mut() {
            s.tick();
        }
        let mut wait_ms = match deadline {
            None => FLAG_CHECK_MS,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                left.as_millis().min(FLAG_CHECK_MS as u128) as i32
            }
        };
        if let Some(s) = sampler.as_deref() {
            wait_ms = wait_ms.min(s.wait_ms());
        }
        let mut pfd = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd. poll is never restarted after a signal handler, so
        // Ctrl-C handled by this thread wakes it up at once.
        let r = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if r > 0 {
            return None;
        }
        if r == 0 && deadline.is_some_and(|d| Instant::now() >= d) {
            kill_group(pid);
            return Some(Termination::TimedOut);
        }
    }
}
