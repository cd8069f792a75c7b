//! A global-allocator wrapper that counts allocation calls and bytes, so that allocations
//! per iteration are a measured output. Every worker wraps its allocator in it; a binary
//! that does not gets "unavailable", never 0.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
/// Bytes allocated and not yet freed (wrapping: a free of memory allocated before the
/// wrapper saw it cannot happen, every allocation of the process goes through it).
static LIVE: AtomicU64 = AtomicU64::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Counts `alloc`, `alloc_zeroed` and `realloc` calls (and the bytes they ask for) made
/// through the wrapped allocator, then forwards them unchanged.
pub struct CountingAlloc<A>(pub A);

/// Allocation calls and requested bytes so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct AllocSnapshot {
    pub allocs: u64,
    pub bytes: u64,
}

/// The bytes the program holds through the global allocator now (allocated, not yet
/// freed: its live data, as requested, without the allocator's rounding), or `None` if
/// the global allocator is not a [`CountingAlloc`].
pub fn live_bytes() -> Option<u64> {
    INSTALLED.load(Relaxed).then(|| LIVE.load(Relaxed))
}

/// The counts so far, or `None` if this process's global allocator is not a
/// [`CountingAlloc`] (nothing has gone through one).
pub fn snapshot() -> Option<AllocSnapshot> {
    INSTALLED.load(Relaxed).then(|| AllocSnapshot {
        allocs: ALLOCS.load(Relaxed),
        bytes: BYTES.load(Relaxed),
    })
}

#[inline(always)]
fn count(size: usize) {
    ALLOCS.fetch_add(1, Relaxed);
    BYTES.fetch_add(size as u64, Relaxed);
    LIVE.fetch_add(size as u64, Relaxed);
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
}

// SAFETY: every method forwards to the wrapped allocator with the caller's arguments, so
// the wrapper upholds exactly the contract the wrapped allocator upholds.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: forwarded unchanged; `ptr` came from this allocator with `layout`.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        LIVE.fetch_sub(layout.size() as u64, Relaxed);
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}
