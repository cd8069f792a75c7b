//! A small program for testing `alloclab exec`: the founding case's out-of-place pattern
//! (two large temporaries per iteration, through libc's `malloc`/`free`), optionally in
//! forked children and threads, plus a check of the whole malloc family's C semantics.
//!
//!     temporaries [--elements N] [--iterations K] [--children C] [--threads T] [--reuse]
//!     temporaries --check-family
//!
//! `--reuse`: the version that keeps its two buffers across iterations (allocated once),
//! for comparing two versions of a program in one session (`alloclab exec -c … -c …`).
//!
//! Prints a checksum of the results (so that the work cannot be optimised away).

use std::ffi::c_void;

/// Two blocks of `n` f64s from libc's malloc.
fn two_blocks(n: usize) -> (*mut f64, *mut f64) {
    // SAFETY: malloc may be called with any size; the results are checked.
    let (t, u) = unsafe {
        (
            libc::malloc(n * 8) as *mut f64,
            libc::malloc(n * 8) as *mut f64,
        )
    };
    assert!(!t.is_null() && !u.is_null(), "malloc failed");
    (t, u)
}

/// One iteration's work: `input` cast into `t`, divided into `u`; one value of it.
fn cast_and_divide(input: &[u8], t: &mut [f64], u: &mut [f64]) -> f64 {
    for (t, &x) in t.iter_mut().zip(input) {
        *t = f64::from(x);
    }
    for (u, t) in u.iter_mut().zip(t.iter()) {
        *u = *t / 255.0;
    }
    u[input.len() / 2]
}

/// `t` and `u` as slices of `n` f64s.
///
/// # Safety
/// Both hold `n` f64s, do not overlap and outlive the slices.
unsafe fn slices<'a>(t: *mut f64, u: *mut f64, n: usize) -> (&'a mut [f64], &'a mut [f64]) {
    // SAFETY: as the caller promises.
    unsafe {
        (
            std::slice::from_raw_parts_mut(t, n),
            std::slice::from_raw_parts_mut(u, n),
        )
    }
}

/// The same work into two buffers allocated once and kept.
fn reused(input: &[u8], iterations: usize) -> f64 {
    let (t, u) = two_blocks(input.len());
    let sum = (0..iterations)
        .map(|_| {
            // SAFETY: two separate blocks of n f64s, freed only after the last iteration.
            let (ts, us) = unsafe { slices(t, u, input.len()) };
            cast_and_divide(input, ts, us)
        })
        .sum();
    // SAFETY: each block is freed once, after its last use.
    unsafe {
        libc::free(t.cast());
        libc::free(u.cast());
    }
    sum
}

/// Two fresh buffers per iteration, freed at its end (the founding case's out-of-place).
fn out_of_place(input: &[u8], iterations: usize) -> f64 {
    let mut sum = 0.0;
    for _ in 0..iterations {
        let (t, u) = two_blocks(input.len());
        // SAFETY: both blocks hold n f64s, are written before they are read and freed once.
        unsafe {
            let (ts, us) = slices(t, u, input.len());
            sum += cast_and_divide(input, ts, us);
            libc::free(t.cast());
            libc::free(u.cast());
        }
    }
    sum
}

fn errno() -> i32 {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() }
}

fn set_errno(v: i32) {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() = v }
}

/// Every function of the malloc family, with the C semantics a replacement must keep.
fn check_family() -> Result<(), String> {
    let page = 4096usize;
    // SAFETY: each block is used within its size and freed once.
    unsafe {
        let p = libc::malloc(100);
        if p.is_null() || libc::malloc_usable_size(p) < 100 {
            return Err("malloc / malloc_usable_size".into());
        }
        set_errno(1234);
        libc::free(p);
        if errno() != 1234 {
            return Err(format!("free changed errno to {}", errno()));
        }
        let big = libc::malloc(64 << 20);
        set_errno(4321);
        libc::free(big);
        if errno() != 4321 {
            return Err(format!(
                "free of a large block changed errno to {}",
                errno()
            ));
        }
        let c = libc::calloc(1000, 8) as *mut u8;
        if c.is_null() || (0..8000).any(|i| *c.add(i) != 0) {
            return Err("calloc".into());
        }
        let r = libc::realloc(c.cast(), 1 << 20) as *mut u8;
        if r.is_null() {
            return Err("realloc".into());
        }
        libc::free(r.cast());
        set_errno(0);
        let over = libc::reallocarray(std::ptr::null_mut(), usize::MAX / 2, 4);
        if !over.is_null() || errno() != libc::ENOMEM {
            return Err(format!(
                "reallocarray overflow: {over:?}, errno {}",
                errno()
            ));
        }
        let ra = libc::reallocarray(std::ptr::null_mut(), 10, 10);
        if ra.is_null() {
            return Err("reallocarray".into());
        }
        libc::free(ra);
        let mut out: *mut c_void = std::ptr::null_mut();
        if libc::posix_memalign(&mut out, 256, 1000) != 0 || !(out as usize).is_multiple_of(256) {
            return Err("posix_memalign".into());
        }
        libc::free(out);
        if libc::posix_memalign(&mut out, 3, 1000) != libc::EINVAL {
            return Err("posix_memalign accepted a non-power-of-two alignment".into());
        }
        let checks: [(&str, *mut c_void, usize); 4] = [
            ("aligned_alloc", libc::aligned_alloc(64, 640), 64),
            ("memalign", libc::memalign(1024, 100), 1024),
            ("valloc", valloc(100), page),
            ("pvalloc", pvalloc(100), page),
        ];
        for (name, p, align) in checks {
            if p.is_null() || !(p as usize).is_multiple_of(align) {
                return Err(format!("{name}: {p:?} not aligned to {align}"));
            }
            libc::free(p);
        }
        set_errno(0);
        let huge = libc::malloc(usize::MAX / 2);
        if !huge.is_null() || errno() != libc::ENOMEM {
            return Err(format!("malloc(huge): {huge:?}, errno {}", errno()));
        }
    }
    Ok(())
}

extern "C" {
    fn pvalloc(size: usize) -> *mut c_void;
    fn valloc(size: usize) -> *mut c_void;
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--check-family") {
        match check_family() {
            Ok(()) => println!("malloc family ok"),
            Err(e) => {
                eprintln!("malloc family check failed: {e}");
                std::process::exit(1);
            }
        }
        return;
    }
    let opt = |name: &str, default: usize| -> usize {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.parse().expect("a whole number"))
            .unwrap_or(default)
    };
    let n = opt("--elements", 1_000_000);
    let iterations = opt("--iterations", 20);
    let children = opt("--children", 0);
    let threads = opt("--threads", 1).max(1);
    let work: fn(&[u8], usize) -> f64 = if args.iter().any(|a| a == "--reuse") {
        reused
    } else {
        out_of_place
    };
    let input: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();

    let mut pids = Vec::new();
    for _ in 0..children {
        // SAFETY: the child only computes, prints and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let s = work(&input, iterations);
            println!("child {s}");
            // SAFETY: leaves the child without running the parent's exit handlers twice.
            unsafe { libc::_exit(0) };
        }
        pids.push(pid);
    }
    // One thread: the main thread itself, whose malloc arena is glibc's brk heap (a
    // spawned thread would get an mmap'd arena of its own). Spawned threads start work
    // together (a barrier), so that they overlap as the threads of a real program do.
    let sums: Vec<f64> = if threads == 1 {
        vec![work(&input, iterations)]
    } else {
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        work(&input, iterations)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a worker thread panicked"))
                .collect()
        })
    };
    for pid in pids {
        let mut status = 0;
        // SAFETY: waits for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child failed"
        );
    }
    println!("checksum {}", sums.iter().sum::<f64>());
}
