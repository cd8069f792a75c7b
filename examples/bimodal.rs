//! A program with two behaviours, for testing that the lab says them as two: each run
//! reads and bumps a counter in `--state FILE` and, on odd counts, touches twice as
//! many pages (so its faults, RSS and time fall into two groups, run after run).
//!
//!     bimodal --state FILE [--mib N]
//!
//! Even runs map, touch and unmap N MiB (default 32); odd runs 2N MiB.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let state = value("--state").unwrap_or_else(|| {
        eprintln!("bimodal: give --state FILE (a counter file it creates and bumps)");
        std::process::exit(2);
    });
    let mib: usize = value("--mib").map_or(32, |v| {
        v.parse().unwrap_or_else(|_| {
            eprintln!("bimodal: --mib takes a whole number of MiB, not {v:?}");
            std::process::exit(2);
        })
    });
    let count: u64 = std::fs::read_to_string(&state)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(0);
    if let Err(e) = std::fs::write(&state, format!("{}\n", count + 1)) {
        eprintln!("bimodal: cannot write {state}: {e}");
        std::process::exit(1);
    }
    let len = (mib << 20) * if count % 2 == 1 { 2 } else { 1 };
    // SAFETY: a fresh private anonymous mapping of `len` bytes, written within its length
    // and unmapped once.
    let sum = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            eprintln!("bimodal: mmap of {len} bytes failed");
            std::process::exit(1);
        }
        std::ptr::write_bytes(p.cast::<u8>(), 1, len);
        let v = *p.cast::<u8>().add(len / 2);
        libc::munmap(p, len);
        v
    };
    println!("{sum}");
}
