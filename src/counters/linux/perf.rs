//! Memory-syscall counts from perf_event_open tracepoint counters on this process.
//!
//! One counter per tracepoint (`syscalls:sys_enter_brk`, …, and `raw_syscalls:sys_enter`
//! for all syscalls), opened disabled in one group, enabled and disabled together with a
//! single ioctl on the group leader around the measured phase. `inherit` is set so that
//! threads started later are counted too. Tracepoint ids come from tracefs; the
//! perf_event_open plumbing is the `perf-event2` crate's.

use crate::counters::Unavailable;
use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The syscalls counted, with their tracepoint (category, name).
pub const TRACEPOINTS: [(Syscall, &str, &str); 6] = [
    (Syscall::Brk, "syscalls", "sys_enter_brk"),
    (Syscall::Mmap, "syscalls", "sys_enter_mmap"),
    (Syscall::Munmap, "syscalls", "sys_enter_munmap"),
    (Syscall::Madvise, "syscalls", "sys_enter_madvise"),
    (Syscall::Mremap, "syscalls", "sys_enter_mremap"),
    (Syscall::All, "raw_syscalls", "sys_enter"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syscall {
    Brk,
    Mmap,
    Munmap,
    Madvise,
    Mremap,
    /// Every syscall.
    All,
}

pub use crate::model::counts::SyscallCounts;

fn set(counts: &mut SyscallCounts, s: Syscall, value: u64) {
    match s {
        Syscall::Brk => counts.brk = value,
        Syscall::Mmap => counts.mmap = value,
        Syscall::Munmap => counts.munmap = value,
        Syscall::Madvise => counts.madvise = value,
        Syscall::Mremap => counts.mremap = value,
        Syscall::All => counts.all = Some(value),
    }
}

/// Open tracepoint counters, disabled until [`SyscallCounters::enable`].
pub struct SyscallCounters {
    /// The group leader is the first.
    counters: Vec<(Syscall, Counter)>,
}

/// Where tracefs is (or can be made) readable.
pub fn tracefs_root() -> Result<PathBuf, Unavailable> {
    const ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    let probe = |root: &str| Path::new(root).join("events/syscalls/sys_enter_brk/id");
    if let Some(root) = ROOTS.iter().find(|r| crate::files::open(probe(r)).is_ok()) {
        return Ok(PathBuf::from(root));
    }
    // tracefs is often not mounted until perf mounts it; root can mount it as perf does.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && Path::new(ROOTS[0]).is_dir() {
        // SAFETY: all arguments are valid NUL-terminated strings; no data pointer.
        let rc = unsafe {
            libc::mount(
                c"nodev".as_ptr(),
                c"/sys/kernel/tracing".as_ptr(),
                c"tracefs".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if rc == 0 && crate::files::open(probe(ROOTS[0])).is_ok() {
            return Ok(PathBuf::from(ROOTS[0]));
        }
    }
    let why = if Path::new(ROOTS[0]).join("events").exists() {
        "tracefs is mounted but its syscall tracepoint ids are not readable by this user"
    } else {
        "tracefs is not mounted (or not readable) at /sys/kernel/tracing or /sys/kernel/debug/tracing"
    };
    Err(Unavailable(format!(
        "syscall counts need perf tracepoints: {why}; run as root, or give this user tracefs read access and CAP_PERFMON"
    )))
}

fn tracepoint_id(root: &Path, category: &str, name: &str) -> Result<u64, Unavailable> {
    let path = root.join("events").join(category).join(name).join("id");
    let mut text = String::new();
    crate::files::open(&path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| Unavailable(format!("cannot read {}: {e}", path.display())))?;
    text.trim()
        .parse()
        .map_err(|_| Unavailable(format!("{} does not hold a number", path.display())))
}

fn paranoid_level() -> String {
    crate::files::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

impl SyscallCounters {
    /// Opens every counter, or says why syscall counts are unavailable.
    pub fn open() -> Result<Self, Unavailable> {
        Self::open_on(0, true, true)
    }

    /// Counters on another process (`pid`, not yet exec'd) that start counting when it
    /// calls execve and are inherited by every thread and child it creates afterwards
    /// (`perf stat`'s way of counting a command). Ungrouped: each counter is enabled by
    /// the exec on its own. Read them after the process is reaped: the counts of its
    /// exited descendants are folded in as they exit.
    pub fn open_for_exec(pid: libc::pid_t) -> Result<Self, Unavailable> {
        Self::open_on(pid, false, true)
    }

    /// As [`Self::open_for_exec`], but on `pid`'s own thread only: nothing it starts is
    /// counted. With both on one launcher (perf record, which starts the command as its
    /// child), the difference is what the launcher's children did.
    pub fn open_for_exec_thread(pid: libc::pid_t) -> Result<Self, Unavailable> {
        Self::open_on(pid, false, false)
    }

    fn open_on(pid: libc::pid_t, grouped: bool, inherit: bool) -> Result<Self, Unavailable> {
        let root = tracefs_root()?;
        let mut counters: Vec<(Syscall, Counter)> = Vec::with_capacity(TRACEPOINTS.len());
        for (syscall, category, name) in TRACEPOINTS {
            let id = tracepoint_id(&root, category, name)?;
            let mut builder = Builder::new(Tracepoint::with_id(id));
            // A syscall tracepoint fires in the kernel: excluding the kernel would hide it.
            builder
                .exclude_kernel(false)
                .exclude_hv(false)
                .inherit(inherit)
                .any_cpu();
            if pid != 0 {
                builder.observe_pid(pid);
            }
            let counter = match counters.first_mut() {
                // Ungrouped (a command's counters): each is enabled by the exec on its own.
                _ if !grouped => builder.enable_on_exec(true).build(),
                // Group members follow their leader's enable and disable.
                Some((_, leader)) => builder.enabled(true).build_with_group(leader),
                None => builder.build(),
            };
            let counter = counter.map_err(|e| {
                Unavailable(format!(
                    "perf_event_open({category}:{name}) failed: {e} (kernel.perf_event_paranoid = {}; tracepoint counters need root or CAP_PERFMON)",
                    paranoid_level()
                ))
            })?;
            counters.push((syscall, counter));
        }
        Ok(SyscallCounters { counters })
    }

    /// Zeroes and starts every counter at once (ioctls on the group leader). Does not
    /// allocate.
    pub fn enable(&mut self) {
        let leader = &mut self.counters[0].1;
        // An ioctl on an open perf fd fails only for a bad request; the read would say so.
        let _ = leader.reset_group();
        let _ = leader.enable_group();
    }

    /// Stops every counter at once. Does not allocate.
    pub fn disable(&mut self) {
        let _ = self.counters[0].1.disable_group();
    }

    /// The counts of the last enabled window.
    pub fn read(&mut self) -> Result<SyscallCounts, Unavailable> {
        let mut counts = SyscallCounts::default();
        for (syscall, counter) in &mut self.counters {
            let value = counter
                .read()
                .map_err(|e| Unavailable(format!("reading a perf counter failed: {e}")))?;
            set(&mut counts, *syscall, value);
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs perf tracepoints (root or CAP_PERFMON)"]
    fn counts_exactly_the_syscalls_made_in_the_window() {
        let mut counters = SyscallCounters::open().expect("perf tracepoint counters");
        let len = 1 << 16;
        counters.enable();
        for _ in 0..5 {
            // SAFETY: a fresh anonymous mapping, unmapped straight away.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                assert_ne!(p, libc::MAP_FAILED);
                libc::madvise(p, len, libc::MADV_DONTNEED);
                libc::munmap(p, len);
            }
        }
        // SAFETY: brk(0) only asks for the current break; it changes nothing.
        unsafe { libc::syscall(libc::SYS_brk, 0usize) };
        counters.disable();
        let c = counters.read().unwrap();
        assert_eq!((c.mmap, c.madvise, c.munmap), (5, 5, 5), "{c:?}");
        assert_eq!(c.brk, 1, "{c:?}");
        assert_eq!(c.mremap, 0, "{c:?}");
        let all = c.all.unwrap();
        assert!(
            (16..=24).contains(&all),
            "only the window's own calls: {c:?}"
        );
        // Outside the window nothing more is counted.
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_brk, 0usize) };
        assert_eq!(counters.read().unwrap(), c);
    }
}
