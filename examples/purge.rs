//! A program that frees a large block, then smaller ones, then idles with a trickle of
//! small allocations: under jemalloc the large block is purged at once (its extent is
//! above `oversize_threshold`) and the smaller ones later, by time-based decay, at the
//! trickle's ticks. For testing that a mechanism line names both triggers.
//!
//!     purge [--large-mib N] [--small-mib N] [--count K] [--idle-ms T] [--trickle-kib B]
//!
//! Defaults: one 32 MiB block, 24 blocks of 1 MiB, then 3,000 ms of a 64 KiB malloc and
//! free every millisecond (large enough that jemalloc's arena sees it, not only its
//! thread cache) — and at least one per millisecond of it, however long a busy host
//! makes that take.

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    match args
        .iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
    {
        None => default,
        Some(v) => v.parse().unwrap_or_else(|_| {
            eprintln!("purge: {name} takes a whole number, not {v:?}");
            std::process::exit(2);
        }),
    }
}

/// mallocs `len` bytes and touches every page.
fn touched(len: usize) -> *mut u8 {
    // SAFETY: a block of `len` bytes, written within its length.
    unsafe {
        let p = libc::malloc(len).cast::<u8>();
        if p.is_null() {
            eprintln!("purge: malloc of {len} bytes failed");
            std::process::exit(1);
        }
        std::ptr::write_bytes(p, 1, len);
        p
    }
}

fn main() {
    let large = arg("--large-mib", 32) << 20;
    let small = arg("--small-mib", 1) << 20;
    let count = arg("--count", 24);
    let idle = arg("--idle-ms", 3000);
    let trickle = arg("--trickle-kib", 64) << 10;
    let mut sum = 0u64;
    let big = touched(large);
    let smalls: Vec<*mut u8> = (0..count).map(|_| touched(small)).collect();
    // SAFETY: every block was allocated above, is read within its length and freed once.
    unsafe {
        sum += u64::from(*big.add(large / 2));
        libc::free(big.cast());
        for p in smalls {
            sum += u64::from(*p.add(small / 2));
            libc::free(p.cast());
        }
    }
    // At least one allocation per millisecond of the idle time even when the host is too
    // busy to wake this loop every millisecond: jemalloc's decay advances on its
    // allocation ticks, so a starved loop would see no decay purge at all.
    let start = std::time::Instant::now();
    let mut ticks = 0;
    while start.elapsed().as_millis() < idle as u128 || ticks < idle {
        ticks += 1;
        let p = touched(trickle);
        // SAFETY: as above.
        unsafe {
            sum += u64::from(*p);
            libc::free(p.cast());
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    println!("{sum}");
}
