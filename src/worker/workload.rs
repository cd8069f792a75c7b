//! The temporary-array kernels and their variants. Every allocation goes through the
//! global allocator's plain `malloc` path (`Vec::with_capacity` + fill), as NumPy's
//! `astype` does; nothing here takes the zeroed (`calloc`) path.

use crate::model::layout::Role;
use crate::model::spec::{Variant, Workload};
use crate::worker::buffers;
use std::hint::black_box;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::worker::kernel::{BoxedKernel, Kernel};

/// Whether every buffer of [`HUGE_ADVICE_FROM`] bytes or more is advised into huge pages
/// (`--thp advise`); set once, before the kernels are prepared.
static ADVISE_HUGE_PAGES: AtomicBool = AtomicBool::new(false);

/// NumPy's threshold for asking for huge pages: 4 MiB (`indicate_hugepages` in
/// `numpy/_core/src/multiarray/alloc.c`).
pub const HUGE_ADVICE_FROM: usize = 1 << 22;

/// Makes every buffer the kernels allocate from now on of 4 MiB or more ask for
/// transparent huge pages, as NumPy does (`--thp advise`).
pub fn advise_huge_pages(on: bool) {
    ADVISE_HUGE_PAGES.store(on, Ordering::Relaxed);
}

/// What NumPy does to a new array's data of `bytes` at `p`: from the next page boundary
/// (a whole page further on when `p` is already on one, as NumPy computes it) to the
/// end, madvise(MADV_HUGEPAGE), its result ignored as NumPy ignores it. Nothing below
/// 4 MiB or with the advice off.
#[inline(always)]
fn advise<T>(p: *const T, bytes: usize) {
    if bytes < HUGE_ADVICE_FROM || !ADVISE_HUGE_PAGES.load(Ordering::Relaxed) {
        return;
    }
    let offset = 4096 - (p as usize) % 4096;
    // SAFETY: the range lies inside the caller's live allocation of `bytes` bytes at
    // `p`, from a page boundary; MADV_HUGEPAGE changes no contents.
    unsafe {
        libc::madvise(
            (p as usize + offset) as *mut libc::c_void,
            bytes - offset,
            libc::MADV_HUGEPAGE,
        );
    }
}

/// Input bytes, deterministic for a seed (splitmix64), identical in every worker.
pub fn input_bytes(size: usize, seed: u64) -> Vec<u8> {
    let mut rng = crate::model::random::SplitMix(seed);
    let mut out = Vec::with_capacity(size);
    while out.len() < size {
        let z = rng.next_u64();
        let take = (size - out.len()).min(8);
        out.extend_from_slice(&z.to_le_bytes()[..take]);
    }
    out
}

/// An FNV-1a-style hash of the bit patterns of the output, one 64-bit element per step
/// (each step depends on the last, so order counts): equal only if every element is
/// equal, barring a collision.
/// Byte by byte it took 10 ms of every worker's start at 1e6 elements.
pub fn checksum_f64(values: &[f64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in values {
        h ^= v.to_bits();
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    h
}

/// Builds the kernel of one of a run's `threads` threads for a workload and variant
/// (`stall`: the service workload's injected stall, tests only).
pub fn prepare(
    workload: Workload,
    variant: Variant,
    size: usize,
    threads: u32,
    seed: u64,
    stall: Option<crate::worker::service::Stall>,
) -> BoxedKernel {
    match workload {
        Workload::Scale => Box::new(Scale::new(variant, size, seed)),
        Workload::Chain => Box::new(Chain::new(variant, size, seed)),
        Workload::Service => Box::new(
            crate::worker::service::Service::new(variant, size, threads, seed).with_stall(stall),
        ),
    }
}

/// `a.astype(np.float64) / 255.0` on a u8 array.
pub struct Scale {
    input: Vec<u8>,
    variant: Variant,
    /// The preallocated output of the `reuse` variant; empty otherwise.
    out: Vec<f64>,
}

impl Scale {
    pub fn new(variant: Variant, size: usize, seed: u64) -> Self {
        let out = if variant == Variant::Reuse {
            advised_zeros(size)
        } else {
            Vec::new()
        };
        let input = input_bytes(size, seed);
        buffers::note(Role::Input, input.as_ptr(), size);
        Scale {
            input,
            variant,
            out,
        }
    }

    /// One iteration; `sink` sees the result before its buffers are freed.
    #[inline(always)]
    fn run<R>(&mut self, sink: impl FnOnce(&[f64]) -> R) -> R {
        match self.variant {
            Variant::InPlace => {
                let mut t = astype_f64(&self.input, Role::Output);
                divide_in_place(&mut t, 255.0);
                sink(&t)
            }
            Variant::OutOfPlace => {
                let t = astype_f64(&self.input, Role::Temporary);
                let r = divide(&t, 255.0);
                // NumPy frees the temporary when func2 returns, then the caller drops r.
                drop(t);
                sink(&r)
            }
            Variant::Reuse => {
                astype_f64_into(&self.input, &mut self.out);
                divide_in_place(&mut self.out, 255.0);
                sink(&self.out)
            }
            Variant::Fused => {
                let a = &self.input;
                let r = new_filled(Role::Output, a.len(), |out| {
                    for (o, &x) in out.iter_mut().zip(a) {
                        o.write(f64::from(x) / 255.0);
                    }
                });
                sink(&r)
            }
        }
    }
}

impl Kernel for Scale {
    #[inline(never)]
    fn iterate(&mut self) {
        self.run(|out| {
            black_box(out);
        });
    }

    fn checksum(&mut self) -> u64 {
        self.run(checksum_f64)
    }
}

/// A new, uninitialised `Vec` of `n` elements through the plain malloc path (not the
/// zeroed one), filled by `fill` — which must write every element; its address noted as
/// a buffer of `role`.
#[inline(always)]
fn new_filled<T>(role: Role, n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    buffers::note(role, v.as_ptr(), n * std::mem::size_of::<T>());
    advise(v.as_ptr(), n * std::mem::size_of::<T>());
    fill(&mut v.spare_capacity_mut()[..n]);
    // SAFETY: capacity is at least `n` and `fill` initialised all `n` elements (every
    // caller writes through a zip over exactly `n` elements).
    unsafe { v.set_len(n) };
    v
}

/// The reuse variant's output, zeroed (`np.zeros`), advised like any new array.
fn advised_zeros(n: usize) -> Vec<f64> {
    let v = vec![0.0; n];
    buffers::note(Role::Output, v.as_ptr(), n * std::mem::size_of::<f64>());
    advise(v.as_ptr(), n * std::mem::size_of::<f64>());
    v
}

/// `a.astype(np.float64)`: a new buffer (of `role`) through the plain malloc path.
#[inline(always)]
fn astype_f64(a: &[u8], role: Role) -> Vec<f64> {
    new_filled(role, a.len(), |out| {
        for (o, &x) in out.iter_mut().zip(a) {
            o.write(f64::from(x));
        }
    })
}

#[inline(always)]
fn astype_f64_into(a: &[u8], out: &mut [f64]) {
    for (o, &x) in out.iter_mut().zip(a) {
        *o = f64::from(x);
    }
}

#[inline(always)]
fn divide_in_place(t: &mut [f64], d: f64) {
    for v in t {
        *v /= d;
    }
}

/// `t / d` into a new buffer.
#[inline(always)]
fn divide(t: &[f64], d: f64) -> Vec<f64> {
    new_filled(Role::Output, t.len(), |out| {
        for (o, &x) in out.iter_mut().zip(t) {
            o.write(x / d);
        }
    })
}

/// `((a + b) * c - d) / e` on five f64 arrays, evaluated like NumPy evaluates it: one
/// operator at a time.
pub struct Chain {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    d: Vec<f64>,
    /// Never zero: values 1..=256.
    e: Vec<f64>,
    variant: Variant,
    /// The preallocated output of the `reuse` variant; empty otherwise.
    out: Vec<f64>,
}

impl Chain {
    pub fn new(variant: Variant, size: usize, seed: u64) -> Self {
        let input = |k: u64, offset: f64| -> Vec<f64> {
            let bytes = input_bytes(size, seed.wrapping_add(k));
            new_filled(Role::Input, size, |out| {
                for (o, &x) in out.iter_mut().zip(&bytes) {
                    o.write(f64::from(x) + offset);
                }
            })
        };
        Chain {
            a: input(0, 0.0),
            b: input(1, 0.0),
            c: input(2, 0.0),
            d: input(3, 0.0),
            e: input(4, 1.0),
            variant,
            out: if variant == Variant::Reuse {
                advised_zeros(size)
            } else {
                Vec::new()
            },
        }
    }

    #[inline(always)]
    fn run<R>(&mut self, sink: impl FnOnce(&[f64]) -> R) -> R {
        let (a, b, c, d, e) = (&self.a, &self.b, &self.c, &self.d, &self.e);
        match self.variant {
            Variant::OutOfPlace => {
                // Each temporary is freed as soon as the next operator has consumed it.
                let t1 = binary(Role::Temporary, a, b, |x, y| x + y);
                let t2 = binary(Role::Temporary, &t1, c, |x, y| x * y);
                drop(t1);
                let t3 = binary(Role::Temporary, &t2, d, |x, y| x - y);
                drop(t2);
                let r = binary(Role::Output, &t3, e, |x, y| x / y);
                drop(t3);
                sink(&r)
            }
            Variant::InPlace => {
                let mut t = binary(Role::Output, a, b, |x, y| x + y);
                binary_in_place(&mut t, c, |x, y| x * y);
                binary_in_place(&mut t, d, |x, y| x - y);
                binary_in_place(&mut t, e, |x, y| x / y);
                sink(&t)
            }
            Variant::Reuse => {
                for ((o, &x), &y) in self.out.iter_mut().zip(a).zip(b) {
                    *o = x + y;
                }
                binary_in_place(&mut self.out, c, |x, y| x * y);
                binary_in_place(&mut self.out, d, |x, y| x - y);
                binary_in_place(&mut self.out, e, |x, y| x / y);
                sink(&self.out)
            }
            Variant::Fused => {
                let r = new_filled(Role::Output, a.len(), |out| {
                    let inputs = a.iter().zip(b).zip(c).zip(d).zip(e);
                    for (o, ((((&a, &b), &c), &d), &e)) in out.iter_mut().zip(inputs) {
                        o.write(((a + b) * c - d) / e);
                    }
                });
                sink(&r)
            }
        }
    }
}

impl Kernel for Chain {
    #[inline(never)]
    fn iterate(&mut self) {
        self.run(|out| {
            black_box(out);
        });
    }

    fn checksum(&mut self) -> u64 {
        self.run(checksum_f64)
    }
}

/// `x op y` elementwise into a new buffer (of `role`).
#[inline(always)]
fn binary(role: Role, x: &[f64], y: &[f64], op: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    new_filled(role, x.len(), |out| {
        for ((o, &p), &q) in out.iter_mut().zip(x).zip(y) {
            o.write(op(p, q));
        }
    })
}

#[inline(always)]
fn binary_in_place(x: &mut [f64], y: &[f64], op: impl Fn(f64, f64) -> f64) {
    for (p, &q) in x.iter_mut().zip(y) {
        *p = op(*p, q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::spec::Choice;

    #[test]
    fn input_is_deterministic_and_seed_dependent() {
        assert_eq!(input_bytes(1001, 7), input_bytes(1001, 7));
        assert_ne!(input_bytes(1001, 7), input_bytes(1001, 8));
        assert_eq!(input_bytes(13, 1).len(), 13);
        // All byte values occur: the conversion sees the full u8 range.
        let bytes = input_bytes(100_000, 42);
        let mut seen = [false; 256];
        bytes.iter().for_each(|&b| seen[b as usize] = true);
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn all_variants_compute_the_same_values_as_a_plain_loop() {
        let size = 4099;
        let input = input_bytes(size, 3);
        let expected: Vec<f64> = input.iter().map(|&x| f64::from(x) / 255.0).collect();
        let want = checksum_f64(&expected);
        for &v in Variant::ALL {
            let mut k = Scale::new(v, size, 3);
            assert_eq!(k.checksum(), want, "variant {v}");
            k.iterate();
            assert_eq!(k.checksum(), want, "variant {v} after a second iteration");
        }
    }

    #[test]
    fn chain_variants_agree_with_the_expression() {
        let size = 3001;
        let k = Chain::new(Variant::InPlace, size, 9);
        let expected: Vec<f64> = (0..size)
            .map(|i| ((k.a[i] + k.b[i]) * k.c[i] - k.d[i]) / k.e[i])
            .collect();
        assert!(k.e.iter().all(|&v| v >= 1.0));
        let want = checksum_f64(&expected);
        for &v in Variant::ALL {
            let mut k = Chain::new(v, size, 9);
            assert_eq!(k.checksum(), want, "variant {v}");
            k.iterate();
            assert_eq!(k.checksum(), want, "variant {v} after a second iteration");
        }
    }

    #[test]
    fn checksum_sees_every_element() {
        let a = vec![0.5; 10];
        let mut b = a.clone();
        b[9] = 0.25;
        assert_ne!(checksum_f64(&a), checksum_f64(&b));
        assert_ne!(checksum_f64(&a), checksum_f64(&a[..9]));
    }
}
