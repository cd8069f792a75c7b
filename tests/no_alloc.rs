//! The measured loop itself never allocates: with a counting global allocator, the only
//! allocations inside `timed_loop` are the kernel's own (exactly 1, 2 or 0 per
//! iteration for in-place, out-of-place and reuse).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use alloclab::measure::{new_histogram, timed_loop, Budget};
use alloclab::spec::Variant;
use alloclab::{alloc_count, workload, CountingAlloc};

#[global_allocator]
static GLOBAL: CountingAlloc<std::alloc::System> = CountingAlloc(std::alloc::System);

#[test]
fn recording_allocates_nothing() {
    let iters = 500;
    let budget = Budget {
        warmup_time_ns: 0,
        warmup_iters: 0,
        min_time_ns: 0,
        min_iters: iters,
        max_iters: iters,
    };
    for (variant, per_iter) in [
        (Variant::Reuse, 0),
        (Variant::InPlace, 1),
        (Variant::OutOfPlace, 2),
    ] {
        let mut kernel = workload::prepare(alloclab::spec::Workload::Scale, variant, 4096, 1);
        let mut hist = new_histogram();
        let before = alloc_count::snapshot().expect("the counting allocator is installed");
        let stats = timed_loop(kernel.as_mut(), &budget, &mut hist);
        let after = alloc_count::snapshot().unwrap();
        assert_eq!(stats.iterations, iters);
        assert_eq!(
            after.allocs - before.allocs,
            per_iter * iters,
            "{variant}: the loop allocated beyond the kernel's own temporaries"
        );
        assert_eq!(hist.len(), iters);
    }
}
