//! Memory-syscall counts without privileges: the driver traces the worker with ptrace,
//! and a seccomp filter installed just before the worker starts makes only the memory
//! syscalls (brk, mmap, munmap, madvise, mremap) stop it — everything else runs at full
//! speed. The worker marks the start and end of its measured phase with a `getppid`
//! call (also trapped), so only calls inside the phase are counted. Threads are followed.
//!
//! Tracing slows every trapped call (a round trip through the tracer), so the driver takes
//! latency and faults from a separate untraced pass of the same run and only the counts
//! from the traced pass.

use super::perf::SyscallCounts;
use crate::counters::Unavailable;
use nix::sys::ptrace::{self, Options};
use nix::sys::signal::Signal;
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The syscall the worker makes at the start and at the end of its measured phase when
/// its syscalls are counted by this tracer.
pub fn phase_marker() {
    // SAFETY: getppid has no preconditions and changes nothing.
    unsafe { libc::syscall(libc::SYS_getppid) };
}

/// Whether this process is being traced (TracerPid in /proc/self/status), and by whom.
pub fn tracer_pid() -> Option<u32> {
    let status = crate::files::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("TracerPid:"))?;
    let pid: u32 = line.split_whitespace().nth(1)?.parse().ok()?;
    (pid != 0).then_some(pid)
}

/// Why ptrace counting cannot work on this platform, if it cannot.
pub fn unsupported() -> Option<Unavailable> {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        None
    } else {
        Some(Unavailable(
            "ptrace syscall counting is implemented for Linux on x86_64 only".into(),
        ))
    }
}

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
/// The architecture the filter accepts (seccomp_data.arch); other architectures' calls
/// are allowed untraced. Counting is implemented for x86_64 only ([`unsupported`]).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(not(target_arch = "x86_64"))]
const AUDIT_ARCH: u32 = 0;
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
/// SECCOMP_RET_DATA for a counted call and for the phase marker (kept distinct for
/// anyone reading the filter; the tracer tells them apart by the syscall's number).
const DATA_COUNTED: u32 = 1;
const DATA_MARKER: u32 = 2;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jeq(k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: BPF_JEQ_K,
        jt,
        jf,
        k,
    }
}

const COUNTED: [libc::c_long; 5] = [
    libc::SYS_brk,
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_madvise,
    libc::SYS_mremap,
];

fn filter_with(marker: bool) -> Vec<libc::sock_filter> {
    let n = COUNTED.len() as u8;
    let mut f = vec![
        stmt(BPF_LD_W_ABS, 4), // seccomp_data.arch
        jeq(AUDIT_ARCH, 1, 0),
        stmt(BPF_RET_K, SECCOMP_RET_ALLOW),
        stmt(BPF_LD_W_ABS, 0), // seccomp_data.nr
    ];
    // After the i-th comparison, n - i more comparisons, the marker test and the allow
    // return stand between it and the "counted" return.
    for (i, nr) in COUNTED.iter().enumerate() {
        f.push(jeq(*nr as u32, n - i as u8 + 1, 0));
    }
    // Without a marker the comparison stays but never matches a syscall number.
    let marker_nr = if marker {
        libc::SYS_getppid as u32
    } else {
        u32::MAX
    };
    f.push(jeq(marker_nr, 2, 0));
    f.push(stmt(BPF_RET_K, SECCOMP_RET_ALLOW));
    f.push(stmt(BPF_RET_K, SECCOMP_RET_TRACE | DATA_COUNTED));
    f.push(stmt(BPF_RET_K, SECCOMP_RET_TRACE | DATA_MARKER));
    f
}

/// One memory syscall a worker made in its measured phase, as the tracer saw it stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrappedCall {
    /// The thread that made it.
    pub tid: i32,
    /// Its process (thread group): whose address space the call acted on. Kept with
    /// [`Log::Evidence`]; the thread's id otherwise.
    pub pid: i32,
    /// CLOCK_MONOTONIC when the tracer saw the stop (the call has not run yet).
    pub time_ns: u64,
    /// The syscall's number (x86_64).
    pub nr: i64,
    /// brk: the break asked for; mmap, munmap, madvise: the length; mremap: the new
    /// length.
    pub arg: u64,
    /// madvise: the advice; mmap: its flags (MAP_ANONYMOUS, …); mremap: the old length.
    pub advice: u64,
    /// The first argument: brk's break, mmap's hint, munmap's, madvise's and mremap's
    /// old address.
    pub addr: u64,
    /// What the call returned, where the tracer waited for its exit ([`Log::Evidence`]:
    /// brk's new break, mmap's address, mremap's new address); None otherwise.
    pub ret: Option<u64>,
    /// Whether it fell inside a worker's measured phase (between its two markers); every
    /// call of a command's tree is.
    pub in_phase: bool,
}

/// Which calls the tracer keeps besides counting them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// None: only the counts.
    Counts,
    /// A worker's calls in its measured phase (and its last break before it); every call
    /// of a command's tree.
    Calls,
    /// Every call of the run, before and after a worker's phase too, each with what it
    /// returned where that says what it did (brk, mmap, mremap: the tracer waits for their
    /// exit), and the times of the phase markers: the evidence of what the allocator did.
    Evidence,
}

/// CLOCK_MONOTONIC now, in ns (the clock perf's `-k mono` and the worker's timeline use).
pub fn monotonic_ns() -> u64 {
    // SAFETY: all-zero is a valid timespec, which clock_gettime writes.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is writable.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What a seccomp stop is, read from the stopped thread's registers with one
/// PTRACE_GETREGS (the syscall's number is `orig_rax`: the event message, SECCOMP_RET_DATA,
/// would cost a request of its own and says nothing the number does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trap {
    /// A worker's phase marker (getppid: the filter traps it only for a worker).
    Marker,
    /// A counted memory syscall: its number and its arguments of interest.
    Call {
        nr: i64,
        arg: u64,
        advice: u64,
        addr: u64,
    },
}

/// Reads the stop of `tid` at a seccomp trap.
#[cfg(target_arch = "x86_64")]
fn read_trap(tid: libc::pid_t) -> Option<Trap> {
    let regs = ptrace::getregs(Pid::from_raw(tid)).ok()?;
    let nr = regs.orig_rax as libc::c_long;
    let (arg, advice) = match nr {
        libc::SYS_getppid => return Some(Trap::Marker),
        libc::SYS_brk => (regs.rdi, 0),
        libc::SYS_mmap => (regs.rsi, regs.r10),
        libc::SYS_munmap => (regs.rsi, 0),
        libc::SYS_madvise => (regs.rsi, regs.rdx),
        libc::SYS_mremap => (regs.rdx, regs.rsi),
        _ => return None,
    };
    Some(Trap::Call {
        nr,
        arg,
        advice,
        addr: regs.rdi,
    })
}

/// What a stopped thread's syscall returned (rax at its syscall-exit stop).
#[cfg(target_arch = "x86_64")]
fn read_return(tid: libc::pid_t) -> Option<u64> {
    ptrace::getregs(Pid::from_raw(tid)).ok().map(|r| r.rax)
}

#[cfg(not(target_arch = "x86_64"))]
fn read_return(_tid: libc::pid_t) -> Option<u64> {
    None
}

/// The number a [`Log::Evidence`] log gives an exec: the process's address space is new
/// from there on.
pub const EXEC: i64 = -1;

/// The number a [`Log::Evidence`] log gives a new process (fork, vfork, a clone without
/// CLONE_THREAD): its `arg` is the new process, which starts with a copy of the address
/// space of the call's process.
pub const FORK: i64 = -2;

/// The thread group of `tid`, from /proc.
fn tgid_of(tid: libc::pid_t) -> Option<libc::pid_t> {
    let status = crate::files::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

/// Whether the evidence needs what a call of `nr` returned: the break brk set, the
/// address mmap and mremap gave.
fn wants_return(nr: i64) -> bool {
    nr == libc::SYS_brk || nr == libc::SYS_mmap || nr == libc::SYS_mremap
}

/// Elsewhere nothing is traced ([`unsupported`] refuses first), so nothing is read.
#[cfg(not(target_arch = "x86_64"))]
fn read_trap(_tid: libc::pid_t) -> Option<Trap> {
    None
}

/// Adds one call of syscall `nr` to `counts`.
fn count(counts: &mut SyscallCounts, nr: i64) {
    match nr {
        libc::SYS_brk => counts.brk += 1,
        libc::SYS_mmap => counts.mmap += 1,
        libc::SYS_munmap => counts.munmap += 1,
        libc::SYS_madvise => counts.madvise += 1,
        libc::SYS_mremap => counts.mremap += 1,
        _ => {}
    }
}

/// Which tracees the tracer follows and which of their trapped calls it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A lab worker: its threads, and only the calls between its two phase markers.
    Worker,
    /// A user's command: every thread and process it starts, every call.
    Tree,
}

/// The seccomp program of a traced child, built before the fork so that the child only
/// has to install it.
pub struct Filter {
    program: Vec<libc::sock_filter>,
}

impl Filter {
    pub fn new(scope: Scope) -> Self {
        Filter {
            program: filter_with(scope == Scope::Worker),
        }
    }

    /// Turns the calling process into a tracee of its parent whose memory syscalls (and,
    /// for a worker, its phase markers) stop it; from its next exec on, nothing can lift
    /// that (no_new_privs). Returns the errno of the step that failed.
    ///
    /// # Safety
    /// Meant for a child between fork and exec: it makes only async-signal-safe calls
    /// (ptrace, prctl) and allocates nothing.
    pub unsafe fn install_in_child(&self) -> Result<(), i32> {
        let fprog = libc::sock_fprog {
            len: self.program.len() as u16,
            filter: self.program.as_ptr() as *mut libc::sock_filter,
        };
        let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if ptrace::traceme().is_err() {
            return Err(errno());
        }
        // SAFETY: prctl with integer arguments; PR_SET_SECCOMP reads `fprog`, which lives
        // until the call returns, and the program it points to, owned by `self`.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &fprog as *const libc::sock_fprog as usize,
                    0,
                    0,
                ) != 0
            {
                return Err(errno());
            }
        }
        Ok(())
    }
}

/// Why the tracer's watchdog killed the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forced {
    TimedOut,
    Interrupted,
}

/// What tracing one run found.
pub struct Trace {
    /// The traced child's raw wait status.
    pub status: libc::c_int,
    /// `wait4`'s rusage of the traced child.
    pub rusage: libc::rusage,
    /// The counted calls (for a worker: between its phase markers).
    pub counts: SyscallCounts,
    /// How many phase markers the worker made (0 for a command).
    pub markers: u32,
    /// A worker's calls between its markers, or a command tree's calls when asked for,
    /// in order. A worker's are preceded by its last brk before the first marker (not
    /// counted, timed before the phase): the break its measured phase starts from, without
    /// which the first brk of the phase would have nothing to be measured against.
    pub calls: Vec<TrappedCall>,
    /// Set when the watchdog killed the run.
    pub forced: Option<Forced>,
    /// When the tracer saw a worker's first and second phase marker (CLOCK_MONOTONIC).
    pub phase_ns: (Option<u64>, Option<u64>),
}

/// Who the watchdog kills, and when.
pub struct Watch {
    /// Passed to kill(2): the child's pid, or minus its process group.
    pub kill: libc::pid_t,
    pub timeout: Option<Duration>,
    /// Polled every 10 ms; true kills the run as [`Forced::Interrupted`].
    pub interrupted: Option<fn() -> bool>,
}

/// Resumes a stopped tracee, delivering `signal` (0: none). Raw: nix's `cont` cannot pass
/// on a real-time signal.
fn cont(tid: libc::pid_t, signal: libc::c_int) {
    // SAFETY: CONT takes the signal to deliver as `data`.
    unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0usize, signal as usize) };
}

/// Resumes a tracee stopped at a seccomp trap until its syscall's exit stop (since Linux
/// 4.8 the seccomp stop comes after the entry stop, so the next stop is the exit's).
fn to_exit(tid: libc::pid_t) {
    // SAFETY: SYSCALL with no signal to deliver.
    unsafe { libc::ptrace(libc::PTRACE_SYSCALL, tid, 0usize, 0usize) };
}

fn decode(tid: libc::pid_t, status: libc::c_int) -> WaitStatus {
    // nix has no Signal for real-time signals, so a stop by one does not decode; it is
    // passed on to the tracee all the same (see `stop_signal`).
    WaitStatus::from_raw(Pid::from_raw(tid), status).unwrap_or(WaitStatus::StillAlive)
}

/// How long the tracer polls for the next stop before it sleeps in `wait4`. A sleeping
/// tracer is woken on the CPU it slept on, an idle one, which takes long to wake while
/// the traced thread waits: on a 2-vCPU VM a trapped call of a lone thread cost 44 µs so,
/// 16 µs with the tracer polling. Calls that come in bursts (an allocator purging one
/// extent after another) are caught by the poll; a lone call costs at most this much
/// polling. Only while the machine has a CPU to spare ([`PollGate`]): polling on a busy
/// one takes the CPU the traced threads wait for (27 µs a call became 46 with two other
/// busy threads on the 2 vCPUs).
const POLL: Duration = Duration::from_micros(20);

/// How often the watchdog looks at the machine's idle time for the [`PollGate`].
const GATE_WINDOW: Duration = Duration::from_millis(100);

/// Whether the tracer polls for stops: set by the watchdog every [`GATE_WINDOW`] from the
/// machine's idle time (`/proc/stat`) plus the time the tracer itself spent polling,
/// which would have been idle otherwise.
#[derive(Default)]
struct PollGate {
    allowed: AtomicBool,
    polled_ns: AtomicU64,
}

/// Idle and iowait ticks of all CPUs, from the `cpu` line of `/proc/stat`.
fn idle_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some(v.get(3)? + v.get(4).copied().unwrap_or(0))
}

/// Whether a window of `window_ns` had half a CPU to spare: idle time plus the tracer's
/// own polling.
fn may_poll(idle_ns: u64, polled_ns: u64, window_ns: u64) -> bool {
    idle_ns.saturating_add(polled_ns) >= window_ns / 2
}

/// Looks at the machine's idle time since the last look and opens or closes `gate`.
struct GateKeeper {
    last: Option<(Instant, u64)>,
    ns_per_tick: u64,
}

impl GateKeeper {
    fn new() -> Self {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        GateKeeper {
            last: None,
            ns_per_tick: 1_000_000_000 / hz.max(1) as u64,
        }
    }

    fn look(&mut self, gate: &PollGate) {
        let now = Instant::now();
        let Some(idle) = crate::files::read_to_string("/proc/stat")
            .ok()
            .as_deref()
            .and_then(idle_ticks)
        else {
            gate.allowed.store(false, Ordering::Relaxed);
            return;
        };
        let polled = gate.polled_ns.swap(0, Ordering::Relaxed);
        if let Some((then, before)) = self.last {
            let window = now.duration_since(then).as_nanos() as u64;
            let idle_ns = idle.saturating_sub(before) * self.ns_per_tick;
            gate.allowed
                .store(may_poll(idle_ns, polled, window), Ordering::Relaxed);
        }
        self.last = Some((now, idle));
    }
}

/// The next stop or exit of this thread's tracees (`wait4`'s result): polled for
/// [`POLL`] when `gate` allows, then waited for.
fn next_stop(status: &mut libc::c_int, ru: &mut libc::rusage, gate: &PollGate) -> libc::pid_t {
    let flags = libc::__WALL | libc::__WNOTHREAD;
    if gate.allowed.load(Ordering::Relaxed) {
        let start = Instant::now();
        loop {
            // SAFETY: waits for this thread's children and tracees only (__WNOTHREAD: not
            // those of the process's other threads); `status` and `ru` are writable.
            let tid = unsafe { libc::wait4(-1, status, flags | libc::WNOHANG, ru) };
            let spent = start.elapsed();
            if tid != 0 || spent >= POLL {
                gate.polled_ns
                    .fetch_add(spent.as_nanos() as u64, Ordering::Relaxed);
                if tid != 0 {
                    return tid;
                }
                break;
            }
            std::hint::spin_loop();
        }
    }
    // SAFETY: as above.
    unsafe { libc::wait4(-1, status, flags, ru) }
}

/// The tracer: follows `pid` (a child of this thread that called
/// [`Filter::install_in_child`] and then exec'd) and whatever `scope` says, counts its
/// trapped memory syscalls until every tracee is gone, and reaps `pid` with its rusage.
/// What it keeps of the calls besides their counts, `log` says.
/// Must run on the thread that started the child (ptrace requests come from the tracer
/// thread). A watchdog thread kills `watch.kill` on timeout or interrupt.
pub fn trace(pid: libc::pid_t, scope: Scope, watch: Watch, log: Log) -> std::io::Result<Trace> {
    let done = Arc::new(AtomicBool::new(false));
    let forced = Arc::new(AtomicU8::new(0));
    let gate = Arc::new(PollGate::default());
    let watchdog = {
        let (done, forced, gate) = (done.clone(), forced.clone(), gate.clone());
        let deadline = watch.timeout.map(|t| Instant::now() + t);
        std::thread::spawn(move || {
            let mut keeper = GateKeeper::new();
            let mut next_look = Instant::now();
            while !done.load(Ordering::SeqCst) {
                let why = if watch.interrupted.is_some_and(|f| f()) {
                    2
                } else if deadline.is_some_and(|d| Instant::now() >= d) {
                    1
                } else {
                    if Instant::now() >= next_look {
                        keeper.look(&gate);
                        next_look += GATE_WINDOW;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                forced.store(why, Ordering::SeqCst);
                // SAFETY: kill takes plain integers; `pid` is not reaped before the tracer
                // loop ends, which waits for this thread.
                unsafe { libc::kill(watch.kill, libc::SIGKILL) };
                break;
            }
        })
    };
    // Exec events in every scope: a worker with a knob or a preloaded library restarts
    // itself (execve) before it measures, and without the option that exec stops it with a
    // plain SIGTRAP, which passed on would kill it.
    let mut options = Options::PTRACE_O_TRACESECCOMP
        | Options::PTRACE_O_TRACECLONE
        | Options::PTRACE_O_EXITKILL
        | Options::PTRACE_O_TRACEEXEC;
    if scope == Scope::Tree {
        options |= Options::PTRACE_O_TRACEFORK | Options::PTRACE_O_TRACEVFORK;
    }
    if log == Log::Evidence {
        // Exit stops of the calls whose result is waited for, told from signal stops.
        options |= Options::PTRACE_O_TRACESYSGOOD;
    }
    let evidence = log == Log::Evidence;
    // The calls whose exit stop is awaited: thread → index in `calls`.
    let mut awaiting: std::collections::HashMap<libc::pid_t, usize> =
        std::collections::HashMap::new();
    let mut phase_ns = (None, None);
    // Each tracee's process (evidence only).
    let mut group: std::collections::HashMap<libc::pid_t, libc::pid_t> =
        std::collections::HashMap::from([(pid, pid)]);
    let mut counts = SyscallCounts {
        all: None,
        ..Default::default()
    };
    let mut markers = 0u32;
    let mut calls = Vec::new();
    let mut seen = HashSet::from([pid]);
    // The order of a hand-over: a new thread or process and its creator both stop at its
    // creation (its first stop; the creator's clone/fork event), and the creator, which
    // was running, is resumed first, as it runs on first untraced. New tracees whose
    // creator's event was handled, and new tracees stopped before it, held until it.
    let mut announced: HashSet<libc::pid_t> = HashSet::new();
    let mut held: HashSet<libc::pid_t> = HashSet::new();
    // A worker's last brk (with an address) before its measured phase.
    let mut break_before: Option<TrappedCall> = None;
    let mut main = None;
    let mut options_set = false;
    let mut setup_error = None;
    loop {
        let mut status = 0;
        // SAFETY: all-zero is a valid rusage.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let tid = next_stop(&mut status, &mut ru, &gate);
        if tid < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            break; // ECHILD: the child and everything it started are gone.
        }
        let mut inject = 0;
        match decode(tid, status) {
            WaitStatus::Exited(..) | WaitStatus::Signaled(..) => {
                seen.remove(&tid);
                awaiting.remove(&tid);
                announced.remove(&tid);
                // A creator that died before its event would hold its new tracee for ever:
                // every exit lets the held ones go.
                for t in held.drain() {
                    cont(t, 0);
                }
                if tid == pid {
                    main = Some((status, ru));
                    if scope == Scope::Tree {
                        // What a command leaves running does not outlive its run: its
                        // group, and every tracee still alive (also those that left the
                        // group or the session).
                        // SAFETY: plain integers; every pid in `seen` is a live tracee,
                        // not yet reaped, so not reused.
                        unsafe {
                            libc::kill(watch.kill, libc::SIGKILL);
                            for &t in &seen {
                                libc::kill(t, libc::SIGKILL);
                            }
                        }
                    }
                }
                continue;
            }
            WaitStatus::PtraceEvent(_, Signal::SIGTRAP, libc::PTRACE_EVENT_SECCOMP) => {
                // Per stop: this wait, one GETREGS and the CONT below; the clock is read
                // only for a call that is kept.
                let in_phase = scope == Scope::Tree || markers == 1;
                let process = group.get(&tid).copied().unwrap_or(tid);
                let call = |nr, arg, advice, addr| TrappedCall {
                    tid,
                    pid: process,
                    time_ns: monotonic_ns(),
                    nr,
                    arg,
                    advice,
                    addr,
                    ret: None,
                    in_phase,
                };
                match read_trap(tid) {
                    Some(Trap::Marker) => {
                        markers += 1;
                        let now = monotonic_ns();
                        match markers {
                            1 => phase_ns.0 = Some(now),
                            2 => phase_ns.1 = Some(now),
                            _ => {}
                        }
                        if markers == 1 && !evidence {
                            calls.extend(break_before.take());
                        }
                    }
                    Some(Trap::Call {
                        nr,
                        arg,
                        advice,
                        addr,
                    }) => {
                        if in_phase {
                            count(&mut counts, nr);
                        }
                        if evidence {
                            calls.push(call(nr, arg, advice, addr));
                            if wants_return(nr) {
                                awaiting.insert(tid, calls.len() - 1);
                                to_exit(tid);
                                continue;
                            }
                        } else if scope == Scope::Tree {
                            if log == Log::Calls {
                                calls.push(call(nr, arg, advice, addr));
                            }
                        } else if markers == 1 {
                            calls.push(call(nr, arg, advice, addr));
                        } else if markers == 0 && nr == libc::SYS_brk && arg != 0 {
                            // Before the phase: not counted, only the break kept.
                            break_before = Some(call(nr, arg, advice, addr));
                        }
                    }
                    None => {}
                }
            }
            // fork / vfork / clone: the creator goes on, then its new tracee if held.
            WaitStatus::PtraceEvent(_, _, ev)
                if ev == libc::PTRACE_EVENT_CLONE
                    || ev == libc::PTRACE_EVENT_FORK
                    || ev == libc::PTRACE_EVENT_VFORK =>
            {
                let new = ptrace::getevent(Pid::from_raw(tid)).unwrap_or(0) as libc::pid_t;
                if evidence && new > 0 {
                    let of = if ev == libc::PTRACE_EVENT_CLONE {
                        tgid_of(new).unwrap_or(new)
                    } else {
                        new
                    };
                    group.insert(new, of);
                    if of == new {
                        let process = group.get(&tid).copied().unwrap_or(tid);
                        calls.push(TrappedCall {
                            tid,
                            pid: process,
                            time_ns: monotonic_ns(),
                            nr: FORK,
                            arg: new as u64,
                            advice: 0,
                            addr: 0,
                            ret: None,
                            in_phase: scope == Scope::Tree || markers == 1,
                        });
                    }
                }
                cont(tid, 0);
                if held.remove(&new) {
                    cont(new, 0);
                } else if new > 0 {
                    announced.insert(new);
                }
                continue;
            }
            // exec events: for the evidence, the process's address space is new.
            WaitStatus::PtraceEvent(_, _, libc::PTRACE_EVENT_EXEC) if evidence => {
                let process = group.get(&tid).copied().unwrap_or(tid);
                calls.push(TrappedCall {
                    tid,
                    pid: process,
                    time_ns: monotonic_ns(),
                    nr: EXEC,
                    arg: 0,
                    advice: 0,
                    addr: 0,
                    ret: None,
                    in_phase: scope == Scope::Tree || markers == 1,
                });
            }
            WaitStatus::PtraceEvent(..) => {}
            // The exit stop of a call whose result the evidence keeps.
            WaitStatus::PtraceSyscall(_) => {
                if let Some(i) = awaiting.remove(&tid) {
                    calls[i].ret = read_return(tid);
                }
            }
            WaitStatus::Stopped(_, Signal::SIGTRAP) if tid == pid && !options_set => {
                // The stop at the child's exec: from here on the filter's traps and the
                // new tracees reach us.
                if let Err(e) = ptrace::setoptions(Pid::from_raw(tid), options) {
                    // Untraced traps would fail the child's memory calls: stop it here.
                    setup_error = Some(std::io::Error::from(e));
                    // SAFETY: plain integers.
                    unsafe { libc::kill(watch.kill, libc::SIGKILL) };
                }
                options_set = true;
            }
            // A new thread's or process's first stop: on at once if its creator is.
            WaitStatus::Stopped(_, Signal::SIGSTOP) if seen.insert(tid) => {
                if !announced.remove(&tid) {
                    held.insert(tid);
                    continue;
                }
            }
            _ if libc::WIFSTOPPED(status) => inject = libc::WSTOPSIG(status),
            _ => continue,
        }
        cont(tid, inject);
    }
    done.store(true, Ordering::SeqCst);
    let _ = watchdog.join();
    if let Some(e) = setup_error {
        return Err(std::io::Error::other(format!(
            "PTRACE_SETOPTIONS failed: {e}"
        )));
    }
    let (status, rusage) = main.ok_or_else(|| {
        std::io::Error::other("the traced child's exit was never reported to the tracer")
    })?;
    Ok(Trace {
        status,
        rusage,
        counts,
        markers,
        calls,
        forced: match forced.load(Ordering::SeqCst) {
            1 => Some(Forced::TimedOut),
            2 => Some(Forced::Interrupted),
            _ => None,
        },
        phase_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracer_polls_only_with_half_a_cpu_to_spare() {
        let stat = "cpu  1537803 23 256629 689241 6199 0 734 1539 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(idle_ticks(stat), Some(689_241 + 6_199));
        assert_eq!(idle_ticks("intr 1 2\n"), None);
        assert_eq!(idle_ticks("cpu  1 2 x 4 5\n"), None);
        let window = 100_000_000;
        // Two busy CPUs: nothing idle, nothing polled.
        assert!(!may_poll(0, 0, window));
        // A lone thread and its tracer on 2 CPUs: one CPU idle.
        assert!(may_poll(100_000_000, 0, window));
        // The tracer's own polling used the idle CPU: it still counts as spare.
        assert!(may_poll(10_000_000, 60_000_000, window));
        assert!(!may_poll(20_000_000, 20_000_000, window));
    }

    #[test]
    fn filter_jumps_land_on_the_right_returns() {
        let f = filter_with(true);
        let counted_ret = f.len() - 2;
        let marker_ret = f.len() - 1;
        for (i, ins) in f.iter().enumerate() {
            if ins.code == BPF_JEQ_K && ins.jt > 0 {
                let target = i + 1 + ins.jt as usize;
                if ins.k == libc::SYS_getppid as u32 || ins.k == u32::MAX {
                    assert_eq!(target, marker_ret);
                } else if ins.k != AUDIT_ARCH {
                    assert_eq!(target, counted_ret, "syscall {}", ins.k);
                }
            }
        }
        assert_eq!(f[counted_ret].k, SECCOMP_RET_TRACE | DATA_COUNTED);
        let t = filter_with(false);
        assert_eq!(t.len(), f.len());
        assert!(t.iter().all(|i| i.k != libc::SYS_getppid as u32));
        assert_eq!(f[marker_ret].k, SECCOMP_RET_TRACE | DATA_MARKER);
    }
}
