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
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The syscall the worker makes at the start and at the end of its measured phase when
/// its syscalls are counted by this tracer.
pub fn phase_marker() {
    // SAFETY: getppid has no preconditions and changes nothing.
    unsafe { libc::syscall(libc::SYS_getppid) };
}

/// Whether this process is being traced (TracerPid in /proc/self/status), and by whom.
pub fn tracer_pid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
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
/// SECCOMP_RET_DATA for a counted call and for the phase marker.
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

/// The seccomp program: memory syscalls and the marker stop the process for the tracer,
/// everything else is allowed.
fn filter() -> Vec<libc::sock_filter> {
    filter_with(true)
}

/// The seccomp program for counting a whole program (`alloclab exec`): only the memory
/// syscalls stop it (a program's own getppid is not a marker).
pub fn tree_filter() -> Vec<libc::sock_filter> {
    filter_with(false)
}

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

/// Counts the memory syscall that `tid` is stopped at (a seccomp trap), by its number
/// (x86_64's `orig_rax`).
#[cfg(target_arch = "x86_64")]
pub fn count_trapped(tid: libc::pid_t, counts: &mut SyscallCounts) {
    // SAFETY: all-zero is a valid user_regs_struct; GETREGS fills it.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: GETREGS writes one user_regs_struct to `regs`.
    let rc = unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGS,
            tid,
            0usize,
            &mut regs as *mut libc::user_regs_struct,
        )
    };
    if rc == 0 {
        match regs.orig_rax as libc::c_long {
            libc::SYS_brk => counts.brk += 1,
            libc::SYS_mmap => counts.mmap += 1,
            libc::SYS_munmap => counts.munmap += 1,
            libc::SYS_madvise => counts.madvise += 1,
            libc::SYS_mremap => counts.mremap += 1,
            _ => {}
        }
    }
}

/// Elsewhere nothing is traced ([`unsupported`] refuses first), so nothing is counted.
#[cfg(not(target_arch = "x86_64"))]
pub fn count_trapped(_tid: libc::pid_t, _counts: &mut SyscallCounts) {}

/// What a traced worker left behind.
pub struct Traced {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// Counts between the two phase markers.
    pub counts: Result<SyscallCounts, Unavailable>,
    pub timed_out: bool,
}

fn ptrace(req: libc::c_uint, pid: libc::pid_t, data: usize) -> libc::c_long {
    // SAFETY: every request used here takes an integer `data` (options, a signal) or
    // none; the ones that write memory are called through their own wrappers below.
    unsafe { libc::ptrace(req, pid, std::ptr::null_mut::<libc::c_void>(), data) }
}

/// Runs `cmd` under the tracer and counts its memory syscalls inside the measured phase.
/// Must run on one thread from spawn to the end (ptrace requests come from the tracer
/// thread).
pub fn run_traced(mut cmd: Command, timeout: Duration) -> std::io::Result<Traced> {
    if let Some(why) = unsupported() {
        return Err(std::io::Error::other(why.0));
    }
    let program = filter();
    let fprog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    let fprog_addr = &fprog as *const libc::sock_fprog as usize;
    // SAFETY: the closure runs in the child between fork and exec and only makes
    // async-signal-safe syscalls; `fprog` and `program` outlive the spawn.
    unsafe {
        cmd.pre_exec(move || {
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0usize, 0usize) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                fprog_addr,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id() as libc::pid_t;
    let pipe_reader = |mut p: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        })
    };
    let out = child.stdout.take().map(|p| pipe_reader(Box::new(p)));
    let err = child.stderr.take().map(|p| pipe_reader(Box::new(p)));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let fired = done_rx.recv_timeout(timeout).is_err();
        if fired {
            // SAFETY: kill has no memory-safety preconditions; the child is not reaped
            // before the tracer loop below ends, which waits for this thread.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        fired
    });

    let mut counts = SyscallCounts::default();
    let mut markers = 0u32;
    let mut options_set = false;
    let mut main_status = None;
    loop {
        let mut status = 0;
        // SAFETY: waits for children and tracees of this thread only (__WNOTHREAD: not
        // those of the process's other threads) — the traced worker and its threads.
        let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::__WNOTHREAD) };
        if tid < 0 {
            break; // ECHILD: the worker and all its threads are gone.
        }
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            if tid == pid {
                main_status = Some(status);
            }
            continue;
        }
        if !libc::WIFSTOPPED(status) {
            continue;
        }
        let sig = libc::WSTOPSIG(status);
        let event = (status >> 16) & 0xff;
        let mut inject = 0;
        if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_SECCOMP {
            let mut data: libc::c_ulong = 0;
            // SAFETY: GETEVENTMSG writes one c_ulong to `data`.
            unsafe {
                libc::ptrace(
                    libc::PTRACE_GETEVENTMSG,
                    tid,
                    0usize,
                    &mut data as *mut libc::c_ulong,
                )
            };
            if data as u32 == DATA_MARKER {
                markers += 1;
            } else if markers == 1 {
                count_trapped(tid, &mut counts);
            }
        } else if sig == libc::SIGTRAP && event == 0 && !options_set {
            // The stop after exec: from here on seccomp and clone events reach us.
            let opts =
                libc::PTRACE_O_TRACESECCOMP | libc::PTRACE_O_TRACECLONE | libc::PTRACE_O_EXITKILL;
            ptrace(libc::PTRACE_SETOPTIONS, tid, opts as usize);
            options_set = true;
        } else if sig == libc::SIGTRAP && event != 0 {
            // Clone events: nothing to do.
        } else if sig == libc::SIGSTOP && tid != pid {
            // A new thread's first stop.
        } else {
            inject = sig;
        }
        ptrace(libc::PTRACE_CONT, tid, inject as usize);
    }
    let _ = done_tx.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    let stdout = out
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    let stderr = err
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    drop(child); // already reaped above; dropping does not wait
    let Some(main_status) = main_status else {
        return Err(std::io::Error::other(
            "the traced worker's exit status was never reported to the tracer",
        ));
    };
    let counts = match markers {
        2 => Ok(counts),
        n => Err(Unavailable(format!(
            "the traced worker marked {n} phase boundaries instead of 2, so its counts are not trusted"
        ))),
    };
    Ok(Traced {
        status: ExitStatus::from_raw(main_status),
        stdout,
        stderr,
        counts,
        timed_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_jumps_land_on_the_right_returns() {
        let f = filter();
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
        let t = tree_filter();
        assert_eq!(t.len(), f.len());
        assert!(t.iter().all(|i| i.k != libc::SYS_getppid as u32));
        assert_eq!(f[marker_ret].k, SECCOMP_RET_TRACE | DATA_MARKER);
    }
}
