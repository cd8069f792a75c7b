//! A small multi-threaded program for testing `alloclab trace -- CMD` and `exec`: threads
//! that end one after another, then memory calls of the main thread after every thread
//! has ended (what a tracer that stops at the first thread's exit loses).
//!
//!     staggered [--threads T] [--rounds R]
//!
//! Each thread maps, touches and unmaps 1 MiB three times and then sleeps 20 ms times
//! its number; after joining them, the main thread mallocs, touches and frees 300 KiB
//! and asks `madvise(0, 0, MADV_DONTNEED)` (a no-op call) R times. Under glibc its
//! memory syscalls are the same in every run: it keeps glibc to one malloc arena, since a
//! thread's own arena is mapped as twice its size and trimmed to an aligned half with one
//! or two munmap calls, depending on where the kernel put the mapping (measured: 17 munmap
//! in most runs, 19 in some).

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a whole number, not {v:?}"))
        })
        .unwrap_or(default)
}

fn map_touch_unmap(len: usize) -> u8 {
    // SAFETY: a fresh private anonymous mapping of `len` bytes, written within its
    // length and unmapped once.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "mmap failed");
        std::ptr::write_bytes(p.cast::<u8>(), 1, len);
        let v = *p.cast::<u8>().add(len / 2);
        libc::munmap(p, len);
        v
    }
}

fn main() {
    // One arena (glibc only; another allocator's library ignores it): see above.
    // SAFETY: mallopt with a documented parameter, before any thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    let threads = arg("--threads", 3);
    let rounds = arg("--rounds", 5);
    let handles: Vec<_> = (1..=threads)
        .map(|n| {
            std::thread::spawn(move || {
                let mut sum = 0u64;
                for _ in 0..3 {
                    sum += u64::from(map_touch_unmap(1 << 20));
                }
                std::thread::sleep(std::time::Duration::from_millis(20 * n as u64));
                sum
            })
        })
        .collect();
    let mut sum: u64 = handles
        .into_iter()
        .map(|h| h.join().expect("a thread panicked"))
        .sum();
    let len = 300 << 10;
    for _ in 0..rounds {
        // SAFETY: a block of `len` bytes, written within its length and freed once; the
        // madvise of an empty range changes nothing.
        unsafe {
            let p = libc::malloc(len).cast::<u8>();
            assert!(!p.is_null(), "malloc failed");
            std::ptr::write_bytes(p, 2, len);
            sum += u64::from(*p.add(len / 3));
            libc::free(p.cast());
            libc::madvise(std::ptr::null_mut(), 0, libc::MADV_DONTNEED);
        }
    }
    println!("{sum}");
}
