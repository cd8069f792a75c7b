//! The Ctrl-C flag: after [`stop_on_interrupt`], SIGINT and SIGTERM set a flag that the
//! run loops check between runs, so finished results are kept and nothing is torn.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The first signal that set the flag (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_interrupt(sig: libc::c_int) {
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on Ctrl-C (SIGINT) and SIGTERM stop the run after the current worker (which
/// gets the terminal's SIGINT too) instead of killing the driver mid-write.
pub fn stop_on_interrupt() {
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to atomics, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The name of the signal that stopped the run: `SIGINT` (Ctrl-C) or `SIGTERM`; None
/// when none has arrived.
pub fn signal_name() -> Option<&'static str> {
    if !interrupted() {
        return None;
    }
    Some(match SIGNAL.load(Ordering::SeqCst) {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    })
}
