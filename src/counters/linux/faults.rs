//! Every minor page fault of a process tree with its address and time: the evidence
//! that tells a fault on memory the allocator gave back (a trim, an unmap, a purge) from
//! a first touch. One perf software event (`page-faults` of minor faults, a sample per
//! fault) per CPU on the child, inherited by everything it starts, enabled at its exec,
//! each with a ring buffer a reader thread drains while the child runs.
//!
//! Needs perf_event_paranoid ≤ 2 (a user's own processes, user-mode faults only), or
//! CAP_PERFMON / root (kernel-mode faults on user memory too); otherwise the evidence
//! says the faults' addresses were not recorded.

use crate::counters::Unavailable;
use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One fault: when (CLOCK_MONOTONIC, as the ptrace tracer's times) and where.
pub use crate::model::evidence::FaultAt as Fault;

/// What the recorder kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultLog {
    /// The faults, in the order each CPU's buffer gave them (sort by time to merge).
    pub faults: Vec<Fault>,
    /// Faults the kernel could not write (a full buffer) or the log did not keep (over
    /// [`MOST_KEPT`]): the log is incomplete by this many.
    pub lost: u64,
    /// Kernel-mode faults on user memory (a read(2) into a fresh buffer) are left out:
    /// this user may sample user mode only.
    pub user_mode_only: bool,
}

/// The most faults a log keeps (16 bytes each: 64 MiB).
pub const MOST_KEPT: usize = 4 << 20;

/// Ring-buffer bytes per CPU: 131,072 faults, over 100 ms of faulting at full speed.
const BUFFER_BYTES: usize = 4 << 20;

/// How often the reader drains the buffers.
const DRAIN_EVERY: Duration = Duration::from_millis(2);

const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_SAMPLE: u32 = 9;

/// The recorder of one child's faults, reading until [`FaultRecorder::finish`].
pub struct FaultRecorder {
    stop: Arc<AtomicBool>,
    reader: std::thread::JoinHandle<FaultLog>,
}

fn open_on(pid: libc::pid_t, cpu: usize, user_only: bool) -> std::io::Result<Sampler> {
    let mut b = Builder::new(Software::PAGE_FAULTS_MIN);
    b.observe_pid(pid)
        .one_cpu(cpu)
        .inherit(true)
        .enable_on_exec(true)
        .exclude_kernel(user_only)
        .exclude_hv(true)
        .sample_period(1)
        .sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::ADDR)
        .clockid(perf_event::Clock::MONOTONIC);
    b.build()?.sampled(BUFFER_BYTES)
}

/// The CPUs this machine may run the child on.
fn cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as usize
}

impl FaultRecorder {
    /// Opens the events on `pid` (forked, not yet exec'd: they start at its exec) and
    /// starts the reader, or says why the faults' addresses cannot be recorded here.
    pub fn open(pid: libc::pid_t) -> Result<Self, Unavailable> {
        let mut samplers = Vec::new();
        let mut user_mode_only = false;
        for cpu in 0..cpus() {
            let opened = match open_on(pid, cpu, user_mode_only) {
                Err(e) if e.raw_os_error() == Some(libc::EACCES) && !user_mode_only => {
                    user_mode_only = true;
                    open_on(pid, cpu, true)
                }
                other => other,
            };
            match opened {
                Ok(s) => samplers.push(s),
                // An offline CPU: nothing runs there.
                Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {}
                Err(e) => {
                    return Err(Unavailable(format!(
                        "perf_event_open(page-faults, one sample per fault) failed: {e} (kernel.perf_event_paranoid = {}; a user's own processes need 2 or less)",
                        crate::files::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                            .map(|s| s.trim().to_string())
                            .unwrap_or_else(|_| "unknown".into())
                    )))
                }
            }
        }
        if samplers.is_empty() {
            return Err(Unavailable("no CPU could be sampled".into()));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let reader = std::thread::Builder::new()
            .name("fault-recorder".into())
            .spawn(move || read_until(samplers, &flag, user_mode_only))
            .map_err(|e| Unavailable(format!("cannot start the fault reader: {e}")))?;
        Ok(FaultRecorder { stop, reader })
    }

    /// Stops reading once the child is gone and gives the log.
    pub fn finish(self) -> Result<FaultLog, Unavailable> {
        self.stop.store(true, Ordering::SeqCst);
        self.reader
            .join()
            .map_err(|_| Unavailable("the fault reader panicked".into()))
    }
}

fn read_until(mut samplers: Vec<Sampler>, stop: &AtomicBool, user_mode_only: bool) -> FaultLog {
    let mut log = FaultLog {
        user_mode_only,
        ..FaultLog::default()
    };
    loop {
        // Read the flag first: a drain after it sees everything written before it.
        let last = stop.load(Ordering::SeqCst);
        for s in &mut samplers {
            drain(s, &mut log);
        }
        if last {
            return log;
        }
        std::thread::sleep(DRAIN_EVERY);
    }
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn drain(s: &mut Sampler, log: &mut FaultLog) {
    while let Some(record) = s.next_record() {
        let bytes = record.to_contiguous();
        match record.ty() {
            // pid, tid (u32 each), time, addr: the fields asked for, in the kernel's order.
            PERF_RECORD_SAMPLE => {
                let pid = bytes
                    .get(0..4)
                    .and_then(|b| b.try_into().ok())
                    .map(u32::from_ne_bytes);
                if let (Some(pid), Some(time_ns), Some(addr)) =
                    (pid, u64_at(&bytes, 8), u64_at(&bytes, 16))
                {
                    if log.faults.len() < MOST_KEPT {
                        log.faults.push(Fault { time_ns, pid, addr });
                    } else {
                        log.lost += 1;
                    }
                }
            }
            // id, lost.
            PERF_RECORD_LOST => log.lost += u64_at(&bytes, 8).unwrap_or(0),
            _ => {}
        }
    }
}
