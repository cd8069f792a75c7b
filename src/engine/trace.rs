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
    /// The worker's own record, with the timeline its request asked for.
    pub record: RunRecord,
    /// The events seen: under perf, every memory syscall and the sampled page faults with
    /// their user stacks; under the ptrace tracer, the memory syscalls without stacks.
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

/// `perf record`'s arguments up to and including its `--`: every memory syscall and one
/// in `fault_period` user page faults with their user stacks, plus `extra` events. perf
/// execs the program itself (nothing in between), and gets SIGTERM as its parent-death
/// signal from the spawn path, on which it ends that program: both die with the lab.
/// perf's build-id cache (~/.debug) is left alone: `perf script` reads the binaries
/// where they are.
pub fn record_argv(sampling: &Sampling, data: &Path, extra: &[String]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![
        sampling.perf.as_os_str().to_owned(),
        "record".into(),
        // Without -q: perf's own errors (a full disk) are said on its stderr.
        "--no-buildid-cache".into(),
        // No side-band thread for BPF events: perf's own calls are then all on its main
        // thread, which the lab's counters beside the recording leave out.
        "--no-bpf-event".into(),
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
    // The program perf starts is exec'd by perf itself, never through a wrapper that
    // execs it in turn: perf's DWARF unwinding fails in a process that exec'd a second
    // program (measured: 2 of 63 brk unwound past libc after `env CMD`, 59 of 60
    // without). It dies with the lab all the same: perf's parent-death signal is SIGTERM,
    // on which perf ends the program it records (spawn::Prepared).
    argv
}

/// The last line of `text` that says something: perf's own progress lines
/// (`[ perf record: … ]`) and blank lines are not.
pub fn last_meaningful_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("[ perf record:"))
        .map(crate::fmt::printable)
}

/// Whether a traced run's failure is perf's own (it could not record: a full disk, a
/// missing event) rather than the program's: perf exits with the program's status, and
/// with 255 and a message of its own when it fails itself. Some(perf's message) then.
pub fn perf_failure(exit_code: Option<i32>, perf_stderr: &str) -> Option<String> {
    if exit_code != Some(255) {
        return None;
    }
    last_meaningful_line(perf_stderr).map(|l| format!("perf record failed (exit status 255): {l}"))
}

/// Reads perf's file back with `perf script` (with processes and their execs and exits
/// when `tasks`): the samples, and what perf said about lost ones. perf script dies with
/// the lab (parent-death signal) and gets the terminal's Ctrl-C with it; a read
/// interrupted so is said as such, without perf's noise.
pub fn read_script(
    sampling: &Sampling,
    data: &Path,
    tasks: bool,
) -> Result<(Script, Option<String>), RunFailure> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(&sampling.perf);
    cmd.args(["script", "--ns", "-F"]);
    if tasks {
        cmd.args(["pid,tid,time,event,trace,ip,sym,dso", "--show-task-events"]);
    } else {
        cmd.arg("tid,time,event,trace,ip,sym,dso");
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: die_with_parent makes only async-signal-safe calls (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            crate::engine::lifetime::die_with_parent(parent);
            Ok(())
        });
    }
    let out = cmd.arg("-i").arg(data).output().map_err(|e| RunFailure {
        cause: format!("perf script could not run: {e}"),
    })?;
    if crate::ui::interrupt::interrupted() {
        return Err(interrupted_failure("while perf script read the samples"));
    }
    if !out.status.success() {
        let said = last_meaningful_line(&String::from_utf8_lossy(&out.stderr))
            .map_or(String::new(), |l| format!(": {l}"));
        return Err(RunFailure {
            cause: format!("perf script failed ({}){said}", out.status),
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

/// The failure of a run stopped by Ctrl-C or SIGTERM, naming the signal.
pub fn interrupted_failure(when: &str) -> RunFailure {
    RunFailure {
        cause: format!(
            "interrupted by {} {when}",
            crate::ui::interrupt::signal_name().unwrap_or("Ctrl-C")
        ),
    }
}

/// Runs `request` (a timeline request) under `perf record` into `data` (perf's file),
/// then reads the samples back. A failure says whether perf failed or the worker did
/// (with the worker's own stderr, kept apart from perf's).
pub fn run(
    executor: &ProcessExecutor,
    request: &WorkerRequest,
    sampling: &Sampling,
    data: &Path,
) -> Result<Traced, RunFailure> {
    let argv = record_argv(sampling, data, &[]);
    let outcome = executor.spawn_request(request, Some((sampling.perf.clone(), argv)));
    let record = outcome.map_err(worker_failure)?;
    if crate::ui::interrupt::interrupted() {
        return Err(interrupted_failure("after the traced run"));
    }
    let (script, lost) = read_script(sampling, data, false)?;
    Ok(Traced {
        record,
        events: script.events,
        skipped_lines: script.skipped,
        lost,
    })
}

/// A traced worker's failure as the executor said it (from the stderr perf and the
/// worker share, the one the spawn path keeps) made true: perf's own failure named as
/// perf's, the worker's with the last line said.
fn worker_failure(f: RunFailure) -> RunFailure {
    if f.cause.starts_with("interrupted") {
        return interrupted_failure("during the traced run");
    }
    let (head, said) = f
        .cause
        .split_once(": ")
        .map_or((f.cause.as_str(), ""), |(h, t)| (h, t));
    let code = head
        .strip_prefix("exit code ")
        .and_then(|c| c.parse::<i32>().ok());
    if let Some(why) = perf_failure(code, said) {
        return RunFailure { cause: why };
    }
    if code.is_some() || head.starts_with("killed by signal") {
        let tail = last_meaningful_line(said).map_or(String::new(), |l| format!(": {l}"));
        return RunFailure {
            cause: format!("the traced worker: {head}{tail}"),
        };
    }
    f
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
                tid: c.tid as u32,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sampling() -> Sampling {
        Sampling {
            perf: "/usr/bin/perf".into(),
            fault_period: 64,
            stack_bytes: 16384,
        }
    }

    #[test]
    fn perf_record_leaves_the_build_id_cache_alone_and_execs_the_program_itself() {
        let argv = record_argv(&sampling(), Path::new("/f/perf/x.data"), &[]);
        let argv: Vec<String> = argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(argv.contains(&"--no-buildid-cache".to_string()), "{argv:?}");
        // Not quiet: perf's own errors reach its stderr.
        assert!(!argv.contains(&"-q".to_string()), "{argv:?}");
        // Nothing between perf and the program: perf execs it itself (a second exec in
        // the process breaks perf's unwinding).
        assert_eq!(argv.last().map(String::as_str), Some("--"), "{argv:?}");
    }

    #[test]
    fn perf_failing_itself_is_told_from_the_program_failing() {
        let full = "failed to write perf data, error: No space left on device\n";
        assert_eq!(
            perf_failure(Some(255), full).as_deref(),
            Some("perf record failed (exit status 255): failed to write perf data, error: No space left on device")
        );
        // perf exits with the program's status; its progress lines are no error.
        assert_eq!(perf_failure(Some(3), full), None);
        assert_eq!(
            perf_failure(
                Some(255),
                "[ perf record: Woken up 1 times to write data ]\n"
            ),
            None
        );
        assert_eq!(perf_failure(None, full), None);
        // A worker's failure as the executor words it, with the stderr perf and the
        // worker share as its tail.
        let f = worker_failure(RunFailure {
            cause: format!("exit code 255: {}", full.trim()),
        });
        assert!(f.cause.starts_with("perf record failed"), "{}", f.cause);
        let f = worker_failure(RunFailure {
            cause: "exit code 1: thread 'main' panicked\nbad request\n[ perf record: Captured and wrote 0.1 MB x.data ]".into(),
        });
        assert_eq!(f.cause, "the traced worker: exit code 1: bad request");
    }
}
