//! A running process's memory syscalls over a window, madvise split by its advice:
//! perf tracepoint counters on each of its threads (and the threads they start), opened
//! at the window's start and read at its end. What `alloclab serve` records per rate.

use crate::counters::Unavailable;
use perf_event::events::Tracepoint;
use perf_event::{Builder, Counter};

pub use crate::model::serve::CallCounts;

/// The counted calls: field, tracepoint, filter.
const COUNTED: [(&str, &str, Option<&str>); 6] = [
    ("brk", "sys_enter_brk", None),
    ("mmap", "sys_enter_mmap", None),
    ("munmap", "sys_enter_munmap", None),
    ("dontneed", "sys_enter_madvise", Some("behavior == 4")),
    ("free", "sys_enter_madvise", Some("behavior == 8")),
    (
        "other",
        "sys_enter_madvise",
        Some("behavior != 4 && behavior != 8"),
    ),
];

/// Counters open on every thread of a process.
pub struct ProcessCalls {
    counters: Vec<(&'static str, Counter)>,
}

impl ProcessCalls {
    /// Opens (and starts) the counters on every thread of `pid` now; threads they start
    /// later are counted too.
    pub fn open(pid: libc::pid_t) -> Result<Self, Unavailable> {
        let root = crate::counters::linux::perf::tracefs_root()?;
        let tids: Vec<libc::pid_t> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map_err(|e| Unavailable(format!("/proc/{pid}/task: {e}")))?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        let mut counters = Vec::new();
        for (name, tp, filter) in COUNTED {
            let path = root.join("events/syscalls").join(tp).join("id");
            let id: u64 = crate::files::read_to_string(&path)
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .ok_or_else(|| Unavailable(format!("cannot read {}", path.display())))?;
            for &tid in &tids {
                let mut b = Builder::new(Tracepoint::with_id(id));
                b.exclude_kernel(false)
                    .exclude_hv(false)
                    .inherit(true)
                    .enabled(true)
                    .observe_pid(tid)
                    .any_cpu();
                let c = b.build().map_err(|e| {
                    Unavailable(format!(
                        "perf_event_open(syscalls:{tp}) on thread {tid} failed: {e} (tracepoint counters need root or CAP_PERFMON)"
                    ))
                })?;
                if let Some(f) = filter {
                    crate::counters::hugefaults::set_filter(&c, f).map_err(Unavailable)?;
                }
                counters.push((name, c));
            }
        }
        Ok(ProcessCalls { counters })
    }

    /// The calls since [`Self::open`].
    pub fn read(&mut self) -> Result<CallCounts, Unavailable> {
        let mut n = CallCounts::default();
        for (name, c) in &mut self.counters {
            let v = c
                .read()
                .map_err(|e| Unavailable(format!("reading a perf counter failed: {e}")))?;
            match *name {
                "brk" => n.brk += v,
                "mmap" => n.mmap += v,
                "munmap" => n.munmap += v,
                "dontneed" => n.madvise_dontneed += v,
                "free" => n.madvise_free += v,
                _ => n.madvise_other += v,
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "needs perf tracepoints (root or CAP_PERFMON)"]
    fn counts_this_process_madvise_by_advice() {
        let mut calls = ProcessCalls::open(std::process::id() as libc::pid_t).unwrap();
        let len = 1 << 16;
        // SAFETY: a fresh anonymous mapping, advised, then unmapped.
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
            for _ in 0..3 {
                libc::madvise(p, len, libc::MADV_DONTNEED);
            }
            libc::madvise(p, len, libc::MADV_FREE);
            libc::madvise(p, len, libc::MADV_WILLNEED);
            libc::munmap(p, len);
        }
        let n = calls.read().unwrap();
        // At least: the test binary's other threads may advise too.
        assert!(
            n.madvise_dontneed >= 3 && n.madvise_free >= 1 && n.madvise_other >= 1,
            "{n:?}"
        );
        assert!(n.mmap >= 1 && n.munmap >= 1, "{n:?}");
    }
}
