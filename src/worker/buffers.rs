//! Where the allocator put each hot buffer: every allocation of the workload's inputs,
//! temporaries and outputs noted by its address, in static counters (no allocation, a
//! few nanoseconds each), read into the run record at its end
//! ([`crate::model::layout::BufferAlignment`]).

use crate::model::layout::{BufferAlignment, Role};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

struct Slot {
    bytes: AtomicU64,
    allocations: AtomicU64,
    mod_64: [AtomicU64; 4],
    /// The first address modulo 4096, u64::MAX before one.
    first_mod_4096: AtomicU64,
    varied_mod_4096: AtomicBool,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            bytes: AtomicU64::new(0),
            allocations: AtomicU64::new(0),
            mod_64: [
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
            ],
            first_mod_4096: AtomicU64::new(u64::MAX),
            varied_mod_4096: AtomicBool::new(false),
        }
    }
}

static SLOTS: [Slot; 3] = [Slot::new(), Slot::new(), Slot::new()];

fn slot(role: Role) -> &'static Slot {
    &SLOTS[role as usize]
}

/// Notes one allocation of `bytes` at `p` as a buffer of `role`.
#[inline(always)]
pub fn note<T>(role: Role, p: *const T, bytes: usize) {
    let s = slot(role);
    let a = p as u64;
    s.bytes.fetch_max(bytes as u64, Relaxed);
    s.allocations.fetch_add(1, Relaxed);
    s.mod_64[((a % 64) / 16) as usize].fetch_add(1, Relaxed);
    let page = a % 4096;
    if let Err(first) = s
        .first_mod_4096
        .compare_exchange(u64::MAX, page, Relaxed, Relaxed)
    {
        if first != page {
            s.varied_mod_4096.store(true, Relaxed);
        }
    }
}

/// What was noted so far, one entry per role that was allocated.
pub fn alignments() -> Vec<BufferAlignment> {
    Role::ALL
        .iter()
        .filter_map(|&role| {
            let s = slot(role);
            let allocations = s.allocations.load(Relaxed);
            (allocations > 0).then(|| BufferAlignment {
                role,
                bytes: s.bytes.load(Relaxed),
                allocations,
                mod_64: std::array::from_fn(|i| s.mod_64[i].load(Relaxed)),
                first_mod_4096: s.first_mod_4096.load(Relaxed),
                same_mod_4096: !s.varied_mod_4096.load(Relaxed),
            })
        })
        .collect()
}
