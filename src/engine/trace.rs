//! The traced run of `alloclab trace`: a worker asked for its timeline, run under
//! `perf record` so that every memory syscall and a sample of the page faults come with
//! their user call stacks (DWARF unwinding of a copy of the stack) and CLOCK_MONOTONIC
//! timestamps, which the worker's iterations are stamped with too. `perf script` turns
//! the samples into text, which [`crate::analysis::trace`] reads.
//!
//! Why the `perf` tool and not a crate: it unwinds DWARF (glibc's inlined `systrim`
//! included, with libc6-dbg's symbols) and demangles Rust, maintained with the kernel;
//! a sampler of our own would need its own unwinder and symbolizer for the same answer.

use super::executor::ProcessExecutor;
use crate::analysis::trace::{parse_perf_script, Event, Script};
use crate::model::record::{RunFailure, RunRecord};
use crate::model::run::WorkerRequest;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The memory syscalls' tracepoints recorded with every call.
pub const SYSCALL_EVENTS: &str = "syscalls:sys_enter_brk,syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,syscalls:sys_enter_madvise,syscalls:sys_enter_mremap";

/// How the traced run samples.
#[derive(Clone, Debug)]
pub struct Sampling {
    /// `perf` on PATH.
    pub perf: PathBuf,
    /// One fault sample per this many user page faults.
    pub fault_period: u64,
    /// Bytes of user stack copied with each sample for DWARF unwinding.
    pub stack_bytes: u32,
}

/// Whether attribution can run here: the `perf` tool is on PATH and this user may open
/// the syscall tracepoints (root, CAP_PERFMON, or perf_event_paranoid ≤ -1 with a
/// readable tracefs). Err says what is missing and what would give it.
pub fn perf_tool() -> Result<PathBuf, String> {
    let path_var = std::env::var_os("PATH");
    let perf =
        super::spawn::resolve_program("perf".as_ref(), path_var.as_deref()).map_err(|_| {
            "the perf tool is not on PATH (Debian: apt-get install linux-perf)".to_string()
        })?;
    crate::counters::linux::perf::SyscallCounters::open().map_err(|why| {
        format!(
            "perf events cannot be opened here ({}): attribution needs root, CAP_PERFMON, or perf_event_paranoid ≤ -1 with tracefs readable",
            why.0
        )
    })?;
    Ok(perf)
}

/// What one traced run gave.
pub struct Traced {
    pub record: RunRecord,
    pub events: Vec<Event>,
    /// Lines of `perf script` that were not understood.
    pub skipped_lines: usize,
    /// What perf said about lost samples, if it lost any.
    pub lost: Option<String>,
}

/// The tracepoints a traced command adds, where this kernel has them: every user page
/// fault (the exact count over time; x86) and every change of the resident counters
/// (RSS over time). Each comes with its reason when missing.
pub fn command_events() -> Vec<Result<String, String>> {
    let tracefs = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
    [
        ("exceptions", "page_fault_user", "faults over time"),
        ("kmem", "rss_stat", "RSS over time"),
    ]
    .into_iter()
    .map(|(group, name, what)| {
        let here = tracefs
            .iter()
            .any(|t| Path::new(t).join("events").join(group).join(name).is_dir());
        if here {
            Ok(format!("{group}:{name}/call-graph=no/"))
        } else {
            Err(format!(
                "{what}: the tracepoint {group}:{name} is not in this kernel's tracefs"
            ))
        }
    })
    .collect()
}

/// `perf record`'s arguments up to and including `--`: every memory syscall and one in
/// `fault_period` user page faults with their user stacks, plus `extra` events.
pub fn record_argv(sampling: &Sampling, data: &Path, extra: &[String]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![
        sampling.perf.as_os_str().to_owned(),
        "record".into(),
        "-q".into(),
        "-k".into(),
        "mono".into(),
        "--call-graph".into(),
        format!("dwarf,{}", sampling.stack_bytes).into(),
        "-e".into(),
        SYSCALL_EVENTS.into(),
        "-e".into(),
        format!("page-faults/period={}/u", sampling.fault_period).into(),
    ];
    for e in extra {
        argv.push("-e".into());
        argv.push(e.into());
    }
    argv.extend([
        // A buffer large enough that no sample is lost at a fault storm's rate (with
        // 16 KiB of stack each); the counts are checked against the worker's own
        // counters anyway.
        "-m".into(),
        "16M".into(),
        "-o".into(),
        data.as_os_str().to_owned(),
        "--".into(),
    ]);
    argv
}

/// Reads perf's file back with `perf script` (with processes and their execs and exits
/// when `tasks`): the samples, and what perf said about lost ones.
pub fn read_script(
    sampling: &Sampling,
    data: &Path,
    tasks: bool,
) -> Result<(Script, Option<String>), RunFailure> {
    let mut cmd = std::process::Command::new(&sampling.perf);
    cmd.args(["script", "--ns", "-F"]);
    if tasks {
        cmd.args(["pid,tid,time,event,trace,ip,sym,dso", "--show-task-events"]);
    } else {
        cmd.arg("tid,time,event,trace,ip,sym,dso");
    }
    let out = cmd.arg("-i").arg(data).output().map_err(|e| RunFailure {
        cause: format!("perf script could not run: {e}"),
    })?;
    if !out.status.success() {
        return Err(RunFailure {
            cause: format!(
                "perf script failed ({}): {}",
                out.status,
                crate::fmt::printable(String::from_utf8_lossy(&out.stderr).trim())
            ),
        });
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lost = stderr
        .lines()
        .find(|l| l.to_lowercase().contains("lost"))
        .map(|l| l.trim().to_string());
    let text = String::from_utf8_lossy(&out.stdout);
    Ok((parse_perf_script(&text, sampling.fault_period), lost))
}

/// Runs `request` (a timeline request) under `perf record` into `data` (perf's file, left
/// for a person to open with `perf report -i`), then reads the samples back.
pub fn run(
    executor: &ProcessExecutor,
    request: &WorkerRequest,
    sampling: &Sampling,
    data: &Path,
) -> Result<Traced, RunFailure> {
    let argv = record_argv(sampling, data, &[]);
    let record = executor.spawn_request(request, Some((sampling.perf.clone(), argv)))?;
    let (script, lost) = read_script(sampling, data, false)?;
    Ok(Traced {
        record,
        events: script.events,
        skipped_lines: script.skipped,
        lost,
    })
}

/// The ptrace tracer's calls as events without stacks, for placing into iterations.
pub fn events_of_calls(calls: &[crate::counters::linux::ptrace::TrappedCall]) -> Vec<Event> {
    use crate::analysis::trace::EventKind;
    calls
        .iter()
        .filter_map(|c| {
            let kind = match c.nr {
                libc::SYS_brk => EventKind::Brk,
                libc::SYS_mmap => EventKind::Mmap,
                libc::SYS_munmap => EventKind::Munmap,
                libc::SYS_madvise => EventKind::Madvise,
                libc::SYS_mremap => EventKind::Mremap,
                _ => return None,
            };
            Some(Event {
                time_ns: c.time_ns,
                pid: c.tid as u32,
                kind,
                weight: 1,
                arg: Some(c.arg),
                advice: (kind == EventKind::Madvise).then_some(c.advice),
                rss_member: None,
                frames: Vec::new(),
            })
        })
        .collect()
}
