//! The evidence run: one more process of a cell (or one more run of a command) under
//! the ptrace tracer, which keeps every memory syscall with its arguments and what it
//! returned, beside the recorder of every page fault's address. Its time is not used;
//! what it shows the calls and faults did is ([`crate::analysis::evidence`]).

use crate::analysis::evidence::{of_recording, Faults};
use crate::counters::linux::ptrace::TrappedCall;
use crate::engine::spawn::ChildRun;
use crate::model::evidence::{Call, CallKind, Evidence, Per};

/// The tracer's calls as [`Call`]s.
pub fn calls_of_trapped(calls: &[TrappedCall]) -> Vec<Call> {
    calls
        .iter()
        .filter_map(|c| {
            let kind = match c.nr {
                crate::counters::linux::ptrace::EXEC => CallKind::Exec,
                crate::counters::linux::ptrace::FORK => CallKind::Fork,
                libc::SYS_brk => CallKind::Brk,
                libc::SYS_mmap => CallKind::Mmap,
                libc::SYS_munmap => CallKind::Munmap,
                libc::SYS_madvise => CallKind::Madvise,
                libc::SYS_mremap => CallKind::Mremap,
                _ => return None,
            };
            Some(Call {
                time_ns: c.time_ns,
                pid: c.pid as u32,
                kind,
                addr: c.addr,
                len: if kind == CallKind::Brk { 0 } else { c.arg },
                advice: c.advice,
                ret: c.ret,
            })
        })
        .collect()
}

/// The evidence of a run recorded with [`crate::counters::linux::ptrace::Log::Evidence`]
/// and its faults: over a worker's measured phase (`units` iterations), or a command's
/// whole run (`per` [`Per::Run`]).
pub fn of_run(run: &ChildRun, per: Per, units: f64) -> Result<Evidence, String> {
    let window = match per {
        Per::Iteration => match run.phase_ns {
            (Some(a), Some(b)) => Some((a, b)),
            _ => {
                return Err(format!(
                    "the recorded worker marked {} phase boundaries instead of 2",
                    run.markers
                ))
            }
        },
        Per::Run => None,
    };
    let calls = calls_of_trapped(&run.calls);
    let faults = match &run.faults {
        Some(Ok(log)) => Faults::Recorded {
            faults: &log.faults,
            lost: log.lost,
            user_mode_only: log.user_mode_only,
        },
        Some(Err(why)) => Faults::Unrecorded(why.0.clone()),
        None => Faults::Unrecorded("the faults were not recorded".into()),
    };
    Ok(of_recording(&calls, faults, window, per, units, "ptrace"))
}

/// The evidence run of a command: one more run of `cmd` under the ptrace tracer (its
/// whole process tree, every call kept with its arguments and results) beside the
/// recorder of its faults' addresses, with `opts`' other settings (timeout, THP).
pub fn of_command(
    cmd: &crate::engine::spawn::Prepared,
    opts: &crate::engine::spawn::LaunchOptions,
) -> Result<(ChildRun, Evidence), String> {
    let recorded = crate::engine::spawn::LaunchOptions {
        trace: Some(crate::counters::linux::ptrace::Scope::Tree),
        log: crate::counters::linux::ptrace::Log::Evidence,
        record_faults: true,
        count_syscalls: false,
        launcher_apart: false,
        capture_stdout: false,
        memory_every: None,
        show_output: false,
        ..*opts
    };
    let run = crate::engine::spawn::run(cmd, &recorded).map_err(|e| e.to_string())?;
    if !run.termination.success() {
        return Err(format!(
            "the recorded run {}",
            run.termination.describe(opts.timeout)
        ));
    }
    let evidence = of_run(&run, Per::Run, 1.0)?;
    Ok((run, evidence))
}
