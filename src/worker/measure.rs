//! The measured phase: warm-up, then iterations until a minimum time and a minimum count
//! are both reached (or a maximum count), each iteration's latency recorded into an HDR
//! histogram allocated beforehand. Counters are enabled only around the measured loop.

use crate::counters::linux::perf::SyscallCounts;
use crate::counters::SyscallSource;
use crate::counters::{memory, rusage, Unavailable};
pub use crate::model::budget::{secs_to_ns, Budget};
pub use crate::model::overhead::{ObserverCosts, Overhead};
use crate::worker::alloc_count::{self, AllocSnapshot};
use crate::worker::workload::{BoxedKernel, Kernel};
use hdrhistogram::Histogram;
use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

/// The latency histogram of a run (defined with the record, whose format it is).
pub use crate::model::record::{new_histogram, HIST_HIGHEST_NS, HIST_LOWEST_NS, HIST_SIGFIG};

/// What the measured loop saw (for several threads: iterations and samples of all of
/// them, wall time of the main thread).
#[derive(Clone, Copy, Debug)]
pub struct LoopStats {
    pub iterations: u64,
    /// Latency samples recorded: one per batch of iterations.
    pub samples: u64,
    /// Wall time of the whole measured loop, including the harness's own clock reads.
    pub wall_ns: u64,
}

/// An iteration is timed alone when it takes at least this many clock-read pairs;
/// shorter ones are timed in batches that long, so that reading the clock costs at most
/// about 1 % of what a sample measures.
pub const BATCH_CLOCK_PAIRS: f64 = 100.0;

/// Iterations per latency sample for iterations of `iteration_ns` when a clock-read
/// pair costs `clock_pair_ns`: 1 when an iteration takes at least
/// [`BATCH_CLOCK_PAIRS`] pairs, else the power of two that brings a batch to at least
/// that (at most 2^20).
pub fn batch_size(iteration_ns: f64, clock_pair_ns: f64) -> u64 {
    let target = BATCH_CLOCK_PAIRS * clock_pair_ns.max(1.0);
    if iteration_ns.is_nan() || iteration_ns <= 0.0 || iteration_ns >= target {
        return 1;
    }
    ((target / iteration_ns).ceil() as u64)
        .next_power_of_two()
        .min(1 << 20)
}

#[inline(always)]
fn elapsed_ns(from: Instant, to: Instant) -> u64 {
    to.duration_since(from).as_nanos() as u64
}

/// Runs `kernel` until `budget` says stop, recording the latency per iteration in ns:
/// each iteration's own with `batch` 1, else each batch's time divided by its iterations
/// (the last batch shortened so that `max_iters` holds exactly). Allocates nothing
/// itself: whatever it allocates is the kernel's.
pub fn timed_loop(
    kernel: &mut dyn Kernel,
    budget: &Budget,
    hist: &mut Histogram<u64>,
    batch: u64,
) -> LoopStats {
    let start = Instant::now();
    let mut iterations = 0u64;
    let mut samples = 0u64;
    loop {
        let n = batch
            .min(budget.max_iters.saturating_sub(iterations))
            .max(1);
        let t0 = Instant::now();
        for _ in 0..n {
            kernel.iterate();
        }
        let t1 = Instant::now();
        hist.saturating_record(elapsed_ns(t0, t1) / n);
        iterations += n;
        samples += 1;
        if budget.measured_done(iterations, elapsed_ns(start, t1)) {
            return LoopStats {
                iterations,
                samples,
                wall_ns: elapsed_ns(start, t1),
            };
        }
    }
}

/// What an open-loop (paced) loop saw besides the latencies from the intended starts.
#[derive(Clone, Debug)]
pub struct Paced {
    /// Each iteration's own time, from its actual start: what a closed-loop tool reports.
    pub service_ns: Histogram<u64>,
    /// The most an iteration's actual start lagged its intended one, in ns.
    pub start_lag_max_ns: u64,
}

/// Below this much waiting, the paced loop spins on the clock; above it, it sleeps all
/// but this much first (a sleep wakes up to ~60 µs late here).
const SPIN_NS: u64 = 200_000;

/// Runs `kernel` as a service answers requests that arrive every `period_ns` (open
/// loop, as wrk2 does): iteration i is meant to start at `i · period_ns` after the
/// loop's start, and starts then or, when the one before ended later, at once. Its
/// latency is recorded from the intended start into `hist` (so that a stall counts
/// for every request it delays, not only the one it hit: coordinated omission
/// corrected), and from the actual start into `paced.service_ns`. Allocates nothing
/// itself.
pub fn paced_loop(
    kernel: &mut dyn Kernel,
    budget: &Budget,
    hist: &mut Histogram<u64>,
    paced: &mut Paced,
    period_ns: u64,
) -> LoopStats {
    let start = Instant::now();
    let mut iterations = 0u64;
    loop {
        let intended = start + std::time::Duration::from_nanos(iterations * period_ns);
        let now = Instant::now();
        if now < intended {
            let wait = elapsed_ns(now, intended);
            if wait > SPIN_NS {
                std::thread::sleep(std::time::Duration::from_nanos(wait - SPIN_NS / 2));
            }
            while Instant::now() < intended {
                std::hint::spin_loop();
            }
        }
        let t0 = Instant::now();
        kernel.iterate();
        let t1 = Instant::now();
        hist.saturating_record(elapsed_ns(intended, t1));
        paced.service_ns.saturating_record(elapsed_ns(t0, t1));
        paced.start_lag_max_ns = paced.start_lag_max_ns.max(elapsed_ns(intended, t0));
        iterations += 1;
        if budget.measured_done(iterations, elapsed_ns(start, t1)) {
            return LoopStats {
                iterations,
                samples: iterations,
                wall_ns: elapsed_ns(start, t1),
            };
        }
    }
}

/// The most iterations a timeline keeps (its samples are allocated before the measured
/// phase: 40 bytes each).
pub const TIMELINE_MAX_ITERS: u64 = 1_000_000;

/// CLOCK_MONOTONIC in ns: the clock `perf record -k mono` stamps its events with.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the one we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The program break (the top of glibc's main heap), as an address.
fn heap_top() -> u64 {
    // SAFETY: sbrk(0) only reports the current break; it changes nothing.
    unsafe { libc::sbrk(0) as u64 }
}

/// [`timed_loop`] with every iteration timed alone and kept in `samples` (allocated by
/// the caller with room for `budget.max_iters`): its start on CLOCK_MONOTONIC, its
/// latency, the process's minor faults during it (getrusage), and the resident set and
/// heap top after it. Reading those costs a getrusage, an open/read/close of
/// /proc/self/statm and an sbrk(0) between iterations, outside the timed span; nothing
/// here allocates.
pub fn timeline_loop(
    kernel: &mut dyn Kernel,
    budget: &Budget,
    hist: &mut Histogram<u64>,
    samples: &mut Vec<crate::model::record::IterationSample>,
) -> LoopStats {
    let start = Instant::now();
    let mut iterations = 0u64;
    let mut faults_before = rusage::read_self().map_or(0, |r| r.minflt);
    loop {
        let start_ns = monotonic_ns();
        let t0 = Instant::now();
        kernel.iterate();
        let t1 = Instant::now();
        let elapsed = elapsed_ns(t0, t1);
        hist.saturating_record(elapsed);
        let faults = rusage::read_self().map_or(faults_before, |r| r.minflt);
        if samples.len() < samples.capacity() {
            samples.push(crate::model::record::IterationSample {
                start_ns,
                elapsed_ns: elapsed,
                minflt: faults - faults_before,
                rss_bytes: memory::rss_bytes().ok(),
                heap_top: heap_top(),
            });
        }
        faults_before = faults;
        iterations += 1;
        if budget.measured_done(iterations, elapsed_ns(start, t1)) {
            return LoopStats {
                iterations,
                samples: iterations,
                wall_ns: elapsed_ns(start, t1),
            };
        }
    }
}

/// Runs the warm-up; returns how many iterations it took and how long.
pub fn warm_up(kernel: &mut dyn Kernel, budget: &Budget) -> (u64, u64) {
    let start = Instant::now();
    let mut iterations = 0u64;
    while !budget.warmup_done(iterations, elapsed_ns(start, Instant::now())) {
        kernel.iterate();
        iterations += 1;
    }
    (iterations, elapsed_ns(start, Instant::now()))
}

struct Empty;
impl Kernel for Empty {
    #[inline(never)]
    fn iterate(&mut self) {
        black_box(());
    }
    fn checksum(&mut self) -> u64 {
        0
    }
}

/// The observer's own scratch memory, kept by the caller until the measurement is over.
///
/// A histogram's counts (268 KiB) are above glibc's 128 KiB mmap threshold, so they are
/// mmapped; freeing them before the measured phase would slide glibc's dynamic mmap
/// threshold to 268 KiB and its trim threshold to 536 KiB: the allocator under test
/// would start in a state the workload never made, and every cliff between 128 KiB and
/// 268 KiB per buffer would be the observer's (glibc's out-of-place storm started at
/// 25,906 elements instead of 8,338, and would move with any change of the histogram's
/// size). Not freeing them until the record is written keeps them out of the
/// allocator's history.
#[must_use = "dropping it before the measurement frees observer memory the allocator under test then remembers"]
pub struct ObserverMemory(#[allow(dead_code)] Vec<Histogram<u64>>);

/// Measures the clock-read cost and the per-sample harness cost; the memory it used is
/// returned to be kept (see [`ObserverMemory`]).
pub fn calibrate() -> (Overhead, ObserverMemory) {
    // 20,000 of each: about 2 ms of every worker's start (200,000 harness samples took
    // 13 ms, a tenth of a compare process, for a mean that 20,000 already fix to ~1 %).
    const PAIRS: u64 = 20_000;
    let mut pairs = new_histogram();
    for _ in 0..PAIRS {
        let t0 = Instant::now();
        let t1 = Instant::now();
        pairs.saturating_record(elapsed_ns(t0, t1));
    }
    let budget = Budget {
        warmup_time_ns: 0,
        warmup_iters: 0,
        min_time_ns: 0,
        min_iters: PAIRS,
        max_iters: PAIRS,
        idle_ns: 0,
    };
    let mut scratch = new_histogram();
    let stats = timed_loop(&mut Empty, &budget, &mut scratch, 1);
    let overhead = Overhead {
        timer_overhead_ns: pairs.value_at_quantile(0.5) as f64,
        timer_min_ns: pairs.min(),
        harness_overhead_ns_per_sample: stats.wall_ns as f64 / stats.iterations as f64,
    };
    (overhead, ObserverMemory(vec![pairs, scratch]))
}

fn mean_ns(n: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_nanos() as f64 / f64::from(n)
}

/// Measures every part of the observer.
pub fn observer_costs() -> ObserverCosts {
    let (o, _kept) = calibrate();
    let mut h = new_histogram();
    let mut x: u64 = 88172645463325252;
    let record_ns = mean_ns(1_000_000, || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        h.saturating_record(500 + x % 5_000_000);
    });
    black_box(&h);
    let mut perf = crate::counters::linux::perf::SyscallCounters::open();
    let (enable, read, why) = match &mut perf {
        Ok(c) => (
            Some(mean_ns(2_000, || {
                c.enable();
                c.disable();
            })),
            Some(mean_ns(2_000, || {
                black_box(c.read().ok());
            })),
            None,
        ),
        Err(e) => (None, None, Some(e.0.clone())),
    };
    ObserverCosts {
        clock_pair_ns: o.timer_overhead_ns,
        record_ns,
        harness_ns_per_sample: o.harness_overhead_ns_per_sample,
        perf_enable_disable_ns: enable,
        perf_read_ns: read,
        ptrace_marker_ns: mean_ns(10_000, crate::counters::linux::ptrace::phase_marker),
        perf_unavailable: why,
    }
}

/// Everything measured in one run's measured phase.
pub struct Measurement {
    /// The main thread's kernel, handed back for the checksum (None once dropped).
    pub main_kernel: Option<BoxedKernel>,
    /// Warm-up iterations of the main thread.
    pub warmup_iterations: u64,
    /// Iterations per latency sample (1: each iteration timed alone).
    pub batch: u64,
    pub stats: LoopStats,
    /// The wall clock (ns since the Unix epoch) just before the main thread's first
    /// timed iteration; None if the clock reads before the epoch.
    pub measured_start_unix_ns: Option<u64>,
    pub latency_ns: Histogram<u64>,
    pub rusage: rusage::Rusage,
    pub syscalls: Result<SyscallCounts, Unavailable>,
    pub allocs: Result<AllocSnapshot, Unavailable>,
    /// The phase's faults that mapped a transparent huge page (this process's count).
    pub huge_faults: Result<crate::model::counts::HugeFaults, Unavailable>,
    /// THP was off for the process: its huge-page faults are 0 exactly, not read.
    pub thp_off: bool,
    pub rss_start_bytes: Result<u64, Unavailable>,
    pub rss_end_bytes: Result<u64, Unavailable>,
    /// What could move this process's time against another's, over the phase.
    pub conditions: crate::model::conditions::Conditions,
    /// The main thread's iterations, when a timeline was asked for.
    pub timeline: Vec<crate::model::record::IterationSample>,
    /// For a paced (open-loop) workload: every thread's service times and start lags.
    pub paced: Option<Paced>,
    /// The bytes the kernels held (their `held_bytes`, all threads) when the measured
    /// phase began and ended, where they keep data.
    pub held_bytes: Option<(u64, u64)>,
    /// The program's live bytes through the global allocator then (the counting
    /// wrapper's), where it is installed.
    pub live_bytes: Option<(u64, u64)>,
}

/// Touches the next 64 KiB of this thread's stack, so that the measured phase does not
/// count the harness's own first touches of it: a frame a few bytes larger than before
/// (any change to [`measure`]) would otherwise add a stack page's fault to the first
/// measured iteration, and move a cliff by it.
#[inline(never)]
fn prefault_stack() {
    let mut pages = [0u8; 64 * 1024];
    for i in (0..pages.len()).step_by(4096) {
        // SAFETY: `i` is inside `pages`; a volatile write keeps the touch.
        unsafe { std::ptr::write_volatile(pages.as_mut_ptr().add(i), 1) };
    }
    std::hint::black_box(&pages);
}

fn unavailable<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> Unavailable + '_ {
    move |e| Unavailable(format!("{what}: {e}"))
}

/// Warm-up, then the measured phase with every counter around it, on one thread per
/// kernel: the first kernel runs on the calling (main) thread, each other one on a
/// thread of its own started before the warm-up. All threads start measuring together
/// and run the budget on their own; counters cover the span from the common start to the
/// moment the last thread finished. Latencies of all threads go into one histogram.
///
/// The batch size is chosen once, from the main thread's warm-up (its time per
/// iteration against `clock_pair_ns`, see [`batch_size`]), and used by every thread.
/// With `timeline` (room for that many iterations), the main thread times every
/// iteration alone and keeps each ([`timeline_loop`]).
pub fn measure(
    kernels: Vec<BoxedKernel>,
    budget: &Budget,
    mut syscalls: SyscallSource<'_>,
    clock_pair_ns: f64,
    timeline: Option<usize>,
) -> std::io::Result<Measurement> {
    let mut kernels = kernels.into_iter();
    let mut main_kernel = kernels
        .next()
        .ok_or_else(|| std::io::Error::other("measure needs at least one kernel"))?;
    let others: Vec<BoxedKernel> = kernels.collect();
    // Three meeting points: everyone warmed up; counters on, go; everyone done.
    let meet = Barrier::new(others.len() + 1);
    let shared_batch = std::sync::atomic::AtomicU64::new(1);
    let mut hist = new_histogram();
    let mut samples = Vec::with_capacity(timeline.unwrap_or(0));
    // Opened (its files found) before the threads start; read without allocating.
    let mut huge = crate::counters::hugefaults::HugeFaultCounter::open();
    std::thread::scope(|scope| {
        let helpers: Vec<_> = others
            .into_iter()
            .map(|mut kernel| {
                let meet = &meet;
                let shared_batch = &shared_batch;
                scope.spawn(move || {
                    let mut h = new_histogram();
                    let mut paced = kernel.pace_ns().map(|_| Paced {
                        service_ns: new_histogram(),
                        start_lag_max_ns: 0,
                    });
                    warm_up(kernel.as_mut(), budget);
                    prefault_stack();
                    meet.wait();
                    let held_start = kernel.held_bytes();
                    meet.wait();
                    let batch = shared_batch.load(std::sync::atomic::Ordering::Relaxed);
                    let stats = match (kernel.pace_ns(), paced.as_mut()) {
                        (Some(period), Some(p)) => {
                            paced_loop(kernel.as_mut(), budget, &mut h, p, period)
                        }
                        _ => timed_loop(kernel.as_mut(), budget, &mut h, batch),
                    };
                    meet.wait();
                    let held = held_start.zip(kernel.held_bytes());
                    (stats, h, paced, held)
                })
            })
            .collect();

        let (warmup_iterations, warmup_ns) = warm_up(main_kernel.as_mut(), budget);
        let pace = main_kernel.pace_ns();
        let mut paced = pace.map(|_| Paced {
            service_ns: new_histogram(),
            start_lag_max_ns: 0,
        });
        let batch = match (timeline, pace) {
            (Some(_), _) | (_, Some(_)) => 1,
            (None, None) => batch_size(
                warmup_ns as f64 / warmup_iterations.max(1) as f64,
                clock_pair_ns,
            ),
        };
        // Published before the second meeting point, which orders it for the helpers.
        shared_batch.store(batch, std::sync::atomic::Ordering::Relaxed);
        prefault_stack();
        meet.wait();
        let conditions_before = crate::counters::conditions::Snapshot::now();
        let rss_start = memory::rss_bytes().map_err(unavailable("reading /proc/self/statm"));
        let allocs_before = alloc_count::snapshot();
        let live_start = alloc_count::live_bytes();
        let held_start = main_kernel.held_bytes();
        let ru_before = rusage::read_self()?;
        if let Ok(c) = &mut huge {
            c.enable();
        }
        syscalls.start();
        meet.wait();
        // A vDSO clock read: no syscall, no allocation, nothing the counters see.
        let measured_start_unix_ns = crate::counters::unix_now_ns();
        let mut stats = match (timeline, pace, paced.as_mut()) {
            (_, Some(period), Some(p)) => {
                paced_loop(main_kernel.as_mut(), budget, &mut hist, p, period)
            }
            (Some(_), _, _) => timeline_loop(main_kernel.as_mut(), budget, &mut hist, &mut samples),
            _ => timed_loop(main_kernel.as_mut(), budget, &mut hist, batch),
        };
        meet.wait();
        syscalls.stop();
        if let Ok(c) = &mut huge {
            c.disable();
        }
        let ru_after = rusage::read_self()?;
        let allocs_after = alloc_count::snapshot();
        let live_end = alloc_count::live_bytes();
        let rss_end = memory::rss_bytes().map_err(unavailable("reading /proc/self/statm"));
        let mut held = held_start.zip(main_kernel.held_bytes());
        let conditions = conditions_before.until(&crate::counters::conditions::Snapshot::now());
        for helper in helpers {
            let (s, h, p, hb) = helper
                .join()
                .map_err(|_| std::io::Error::other("a workload thread panicked"))?;
            stats.iterations += s.iterations;
            stats.samples += s.samples;
            hist.add(&h)
                .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
            if let (Some(mine), Some(theirs)) = (paced.as_mut(), p) {
                mine.service_ns
                    .add(&theirs.service_ns)
                    .map_err(|e| std::io::Error::other(format!("{e:?}")))?;
                mine.start_lag_max_ns = mine.start_lag_max_ns.max(theirs.start_lag_max_ns);
            }
            held = held.zip(hb).map(|((a, b), (c, d))| (a + c, b + d));
        }
        let allocs = match (allocs_before, allocs_after) {
            (Some(b), Some(a)) => Ok(AllocSnapshot {
                allocs: a.allocs - b.allocs,
                bytes: a.bytes - b.bytes,
            }),
            _ => Err(Unavailable(
                "the global allocator is not wrapped in alloclab::CountingAlloc".into(),
            )),
        };
        let rusage = ru_after.since(&ru_before);
        // Read after the helper threads exited: an inherited counter's counts are
        // folded in as each thread exits (counting stopped before that).
        let huge_faults = match &mut huge {
            Ok(c) => c.read(),
            Err(e) => Err(e.clone()),
        }
        .map_err(Unavailable);
        // Read after the helper threads exited: their inherited counts are folded into
        // the counters when they exit (counting stopped before that).
        let syscalls = syscalls.read();
        Ok(Measurement {
            main_kernel: Some(main_kernel),
            warmup_iterations,
            batch,
            stats,
            measured_start_unix_ns,
            latency_ns: hist,
            rusage,
            syscalls,
            allocs,
            huge_faults,
            thp_off: huge.as_ref().is_ok_and(|c| c.disabled()),
            rss_start_bytes: rss_start,
            rss_end_bytes: rss_end,
            conditions,
            timeline: samples,
            paced,
            held_bytes: held,
            live_bytes: live_start.zip(live_end),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(u64);
    impl Kernel for Counting {
        fn iterate(&mut self) {
            self.0 += 1;
        }
        fn checksum(&mut self) -> u64 {
            self.0
        }
    }

    #[test]
    fn stop_rule_needs_both_minimums_or_the_maximum() {
        let b = Budget {
            warmup_time_ns: 0,
            warmup_iters: 0,
            min_time_ns: 1000,
            min_iters: 10,
            max_iters: 50,
            idle_ns: 0,
        };
        assert!(!b.measured_done(9, 5000));
        assert!(!b.measured_done(10, 999));
        assert!(b.measured_done(10, 1000));
        assert!(b.measured_done(50, 0));
    }

    #[test]
    fn loop_records_one_sample_per_iteration() {
        let b = Budget {
            warmup_time_ns: 0,
            warmup_iters: 0,
            min_time_ns: 0,
            min_iters: 1234,
            max_iters: 1234,
            idle_ns: 0,
        };
        let mut k = Counting(0);
        let mut h = new_histogram();
        let s = timed_loop(&mut k, &b, &mut h, 1);
        assert_eq!(s.iterations, 1234);
        assert_eq!(k.0, 1234);
        assert_eq!((h.len(), s.samples), (1234, 1234));
        assert!(s.wall_ns >= h.min() * 1234);
        // Batches of 16: one sample per batch, the last one shortened to keep max_iters.
        let mut k = Counting(0);
        let mut h = new_histogram();
        let s = timed_loop(&mut k, &b, &mut h, 16);
        assert_eq!((s.iterations, k.0), (1234, 1234));
        assert_eq!(
            (h.len(), s.samples),
            (78, 78),
            "77 full batches and one of 2"
        );
    }

    #[test]
    fn batches_reach_a_hundred_clock_pairs() {
        assert_eq!(batch_size(5_000.0, 30.0), 1, "5 µs is timed alone");
        assert_eq!(batch_size(3_000.0, 30.0), 1);
        assert_eq!(batch_size(2_999.0, 30.0), 2);
        assert_eq!(batch_size(50.0, 30.0), 64, "3,000 / 50 = 60 → 64");
        assert_eq!(batch_size(0.0, 30.0), 1, "no estimate: one at a time");
        assert_eq!(batch_size(0.001, 30.0), 1 << 20, "capped");
    }

    #[test]
    fn warm_up_honours_count_and_max() {
        let mut b = Budget {
            warmup_time_ns: 0,
            warmup_iters: 7,
            ..Budget::default()
        };
        let mut k = Counting(0);
        assert_eq!(warm_up(&mut k, &b).0, 7);
        b.max_iters = 2;
        assert_eq!(warm_up(&mut k, &b).0, 2);
        b.warmup_iters = 0;
        assert_eq!(warm_up(&mut k, &b).0, 1);
    }

    #[test]
    fn calibration_is_positive_and_ordered() {
        let (o, _kept) = calibrate();
        assert!(o.timer_min_ns as f64 <= o.timer_overhead_ns);
        assert!(o.harness_overhead_ns_per_sample > 0.0);
    }
}
