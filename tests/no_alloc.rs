//! The measured loop itself never allocates: with a global allocator that counts the
//! allocations of the calling thread, the only allocations inside `timed_loop` are the
//! kernel's own (exactly 1, 2 or 0 per iteration for in-place, out-of-place and reuse).
//! Counting per thread keeps the test harness's own threads out of the count.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use alloclab::model::spec::Variant;
use alloclab::worker::measure::{new_histogram, timed_loop, timeline_loop, Budget};
use alloclab::worker::workload;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static MINE: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = MINE.try_with(|c| c.set(c.get() + 1));
}

fn mine() -> u64 {
    MINE.with(Cell::get)
}

struct ThreadCounting;

// SAFETY: every method forwards to System unchanged; counting touches only a
// const-initialised thread-local Cell, which never allocates.
unsafe impl GlobalAlloc for ThreadCounting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: ThreadCounting = ThreadCounting;

#[test]
fn recording_allocates_nothing() {
    let iters = 500;
    let budget = Budget::exactly(0, iters);
    // Timed one by one and in batches (as for sub-microsecond iterations).
    for batch in [1, 4] {
        for (variant, per_iter) in [
            (Variant::Reuse, 0),
            (Variant::InPlace, 1),
            (Variant::OutOfPlace, 2),
            (Variant::Fused, 1),
        ] {
            let mut kernel = workload::prepare(
                alloclab::model::spec::Workload::Scale,
                variant,
                4096,
                1,
                1,
                None,
            );
            let mut hist = new_histogram();
            let before = mine();
            let stats = timed_loop(kernel.as_mut(), &budget, &mut hist, batch);
            let after = mine();
            assert_eq!(stats.iterations, iters);
            assert_eq!(
                after - before,
                per_iter * iters,
                "{variant}: the loop allocated beyond the kernel's own buffers"
            );
            assert_eq!(hist.len(), stats.samples);
            assert_eq!(stats.samples, iters.div_ceil(batch));
        }
    }
}

/// The timeline's loop (`alloclab trace`) reads rusage, /proc/self/statm and the break
/// after every iteration: none of that may allocate either, or the trace would change
/// what the allocator does.
#[test]
fn the_timeline_allocates_nothing_and_keeps_every_iteration() {
    let iters = 300;
    let budget = Budget::exactly(0, iters);
    for (variant, per_iter) in [(Variant::InPlace, 1), (Variant::OutOfPlace, 2)] {
        let mut kernel = workload::prepare(
            alloclab::model::spec::Workload::Scale,
            variant,
            4096,
            1,
            1,
            None,
        );
        let mut hist = new_histogram();
        let mut samples = Vec::with_capacity(iters as usize);
        let before = mine();
        let stats = timeline_loop(kernel.as_mut(), &budget, &mut hist, &mut samples);
        let after = mine();
        assert_eq!(after - before, per_iter * iters, "{variant}");
        assert_eq!((stats.iterations, samples.len() as u64), (iters, iters));
        // In order, one after another, each within its own span.
        for w in samples.windows(2) {
            assert!(w[1].start_ns >= w[0].start_ns + w[0].elapsed_ns, "{w:?}");
        }
        assert!(samples.iter().all(|s| s.rss_bytes.is_some_and(|r| r > 0)));
        assert_eq!(hist.len(), iters);
    }
}

/// The open loop of the service workload (`paced_loop`) waits, reads the clock and
/// records two histograms per request: none of that allocates, and every request gets
/// one value in each, the one from its intended start never below its own.
#[test]
fn the_paced_loop_allocates_nothing_and_records_each_request_twice() {
    struct Idle(u64);
    impl alloclab::worker::workload::Kernel for Idle {
        fn iterate(&mut self) {
            self.0 += 1;
        }
        fn checksum(&mut self) -> u64 {
            self.0
        }
        fn pace_ns(&self) -> Option<u64> {
            Some(20_000)
        }
    }
    let iters = 400;
    let budget = Budget::exactly(0, iters);
    let mut kernel = Idle(0);
    let mut hist = new_histogram();
    let mut paced = alloclab::worker::measure::Paced {
        service_ns: new_histogram(),
        start_lag_max_ns: 0,
    };
    let before = mine();
    let stats =
        alloclab::worker::measure::paced_loop(&mut kernel, &budget, &mut hist, &mut paced, 20_000);
    let after = mine();
    assert_eq!(after - before, 0);
    assert_eq!((stats.iterations, kernel.0), (iters, iters));
    assert_eq!((hist.len(), paced.service_ns.len()), (iters, iters));
    assert!(hist.max() >= paced.service_ns.max());
    // 400 requests 20 µs apart: the loop cannot end before the last one's intended start.
    assert!(stats.wall_ns >= (iters - 1) * 20_000, "{}", stats.wall_ns);
}
