//! The one engine: every command is a plan of *subjects* — a built-in workload cell run by
//! a worker, or a user's command under an allocator — run here and nowhere else.
//!
//! * [`schedule`]: warm-up, replicated processes in interleaved rounds whose order is
//!   shuffled in every round from a recorded seed, extra rounds on demand, Ctrl-C.
//! * [`spawn`]: the one spawn path (die-with-parent, own process group, timeouts,
//!   interrupts, exit statuses, a subreaper sweep of every descendant after each run),
//!   for workers and commands alike.
//! * [`executor`]: a built-in cell's run (a worker process; the ptrace method's traced
//!   pass) and what its output means; [`command`]: a command's preparation (preload,
//!   knobs, the probe) and its session, [`elf`] what a command links by itself; [`program`]: a command at any size (`{size}`,
//!   `{calls}`).
//! * [`trace`]: a worker's timeline run under `perf record`, its samples read back.
//! * [`preflight`], [`calibrate`], [`lifetime`]: checks before anything runs, the
//!   observer's cost, no child outliving the driver.

pub mod calibrate;
pub mod command;
pub mod elf;
pub mod evidence;
pub mod executor;
pub mod lifetime;
pub mod preflight;
pub mod probe;
pub mod program;
pub mod python;
pub mod resp;
pub mod schedule;
pub mod serve;
pub mod spawn;
pub mod trace;

pub use executor::*;

/// What every command that runs subjects does first, in one place: Ctrl-C and SIGTERM
/// stop the schedule after the run under way (the run itself is killed and not kept),
/// and this process becomes the subreaper of what its runs leave behind, so that the
/// spawn path's sweep after every run also finds descendants that left the process
/// group or the session (`setsid` daemons).
pub fn begin() {
    crate::ui::interrupt::stop_on_interrupt();
    if let Err(e) = lifetime::become_subreaper() {
        crate::fmt::say!(
            "warning: cannot become a child subreaper ({e}): what a run starts in another session may outlive it"
        );
    }
}
