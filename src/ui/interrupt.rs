//! The Ctrl-C flag: after [`stop_on_interrupt`], SIGINT, SIGTERM and SIGHUP (the terminal
//! closed) set a flag that the run loops check between runs, so finished results are
//! kept and nothing is torn.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal that raised the flag (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// How many of those signals came.
static COUNT: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_interrupt(sig: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on Ctrl-C (SIGINT) and SIGTERM stop the run after the current worker (which
/// gets the terminal's SIGINT too) instead of killing the driver mid-write.
pub fn stop_on_interrupt() {
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
        libc::signal(libc::SIGHUP, handler);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The signal that raised the flag, by name ("SIGINT" for Ctrl-C, "SIGTERM"); None while
/// none has come.
pub fn signal_name() -> Option<&'static str> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}

/// How many interrupting signals have come: work that goes on after the first (say, the
/// analysis of what ran before it) stops when this grows again.
pub fn count() -> u32 {
    COUNT.load(Ordering::SeqCst)
}
