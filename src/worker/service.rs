//! The service workload: an in-process key-value store answering requests that arrive
//! at a fixed rate (open loop). Each request is a get, a set or a delete of one key;
//! values follow the value-size distribution of Facebook's memcached ETC pool, keys its
//! key-size distribution (Atikoglu et al., SIGMETRICS 2012). The stored items live long,
//! the request's own buffers (its key, the value read in, the reply) die with it.

use crate::model::spec::Variant;
use std::hint::black_box;

/// Keys in each thread's store (a shard of its own: threads share nothing).
pub const KEYS: usize = 16_384;
/// The largest value: memcached's default item limit, 1 MiB.
pub const MAX_VALUE: usize = 1 << 20;
/// Of every 1,000 sets, those whose value is large: log-uniform from [`LARGE_MIN`] to
/// [`MAX_VALUE`]. The lab's addition to ETC, whose fitted tail gives fewer than 1 in
/// 10,000 values above 16 KiB: a service whose values are all small never asks its
/// allocator for a block above glibc's mmap threshold.
pub const LARGE_PER_MILLE: u64 = 5;
/// The smallest large value, 64 KiB.
pub const LARGE_MIN: usize = 64 << 10;
/// Of every 100 requests, gets; then [`SETS_PERCENT`] sets; the rest deletes. ETC's own
/// mix is 30 gets to 1 set with few deletes; the lab writes more, so that a run of
/// seconds churns the heap as hours of ETC would.
pub const GETS_PERCENT: u64 = 75;
/// Of every 100 requests, sets.
pub const SETS_PERCENT: u64 = 20;
/// Of every 100 keys, those holding a value when the store is filled: the share sets
/// and deletes keep it at (20 / (20 + 5)).
pub const FILLED_PERCENT: u64 = 80;

/// ETC's value sizes: a generalized Pareto distribution (location 0).
const VALUE_SCALE: f64 = 214.476;
const VALUE_SHAPE: f64 = 0.348238;
/// ETC's key sizes: a generalized extreme value distribution.
const KEY_LOCATION: f64 = 30.7984;
const KEY_SCALE: f64 = 8.20449;
const KEY_SHAPE: f64 = 0.078688;
/// memcached's longest key.
const MAX_KEY: usize = 250;
/// What a reply puts before the value (a RESP bulk string's header and trailer at most).
const REPLY_FRAME: usize = 16;

/// splitmix64 ([`crate::model::random::SplitMix`]): deterministic for a seed, identical
/// in every worker.
#[derive(Clone, Debug)]
struct Rng(crate::model::random::SplitMix);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(crate::model::random::SplitMix(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in (0, 1), never 0 or 1.
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One request's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Get,
    Set(usize),
    Delete,
}

/// The stream of requests: operation, key, value length. The same for a seed in every
/// worker, whatever the allocator.
#[derive(Clone, Debug)]
struct Requests(Rng);

impl Requests {
    fn next(&mut self) -> (Op, usize) {
        let key = self.0.below(KEYS as u64) as usize;
        let op = match self.0.below(100) {
            n if n < GETS_PERCENT => Op::Get,
            n if n < GETS_PERCENT + SETS_PERCENT => Op::Set(value_len(&mut self.0)),
            _ => Op::Delete,
        };
        (op, key)
    }
}

/// A value's length: ETC's generalized Pareto, or now and then a large one.
fn value_len(rng: &mut Rng) -> usize {
    if rng.below(1000) < LARGE_PER_MILLE {
        let (lo, hi) = ((LARGE_MIN as f64).ln(), (MAX_VALUE as f64).ln());
        return ((lo + (hi - lo) * rng.unit()).exp() as usize).clamp(LARGE_MIN, MAX_VALUE);
    }
    let x = VALUE_SCALE / VALUE_SHAPE * ((1.0 - rng.unit()).powf(-VALUE_SHAPE) - 1.0);
    (x as usize).clamp(1, MAX_VALUE)
}

/// A key's length: ETC's generalized extreme value distribution.
fn key_len(rng: &mut Rng) -> usize {
    let x = KEY_LOCATION + KEY_SCALE / KEY_SHAPE * ((-rng.unit().ln()).powf(-KEY_SHAPE) - 1.0);
    (x as usize).clamp(8, MAX_KEY)
}

/// Writes key `index`'s bytes (its length fixed per key) into `out`.
fn write_key(out: &mut Vec<u8>, index: usize, len: usize) {
    let digits = (index as u64).to_le_bytes();
    for i in 0..len {
        out.push(b'a' + (digits[i % 8].wrapping_add(i as u8)) % 26);
    }
}

pub use crate::model::run::Stall;

/// Every key's length, and the keys holding a value when the store is filled with their
/// values' lengths: drawn from `seed`, the same in every worker and client.
fn keys_and_fill(seed: u64) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut rng = Rng::new(seed ^ 0x5EED_5E41_1CE5_0000);
    let key_lens: Vec<u8> = (0..KEYS).map(|_| key_len(&mut rng) as u8).collect();
    let mut filled = Vec::new();
    for key in 0..KEYS {
        if rng.below(100) < FILLED_PERCENT {
            filled.push((key, value_len(&mut rng)));
        }
    }
    (key_lens, filled)
}

/// One request as a client sends it to a real server ([`Wire`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireOp {
    /// Read the key's value.
    Get,
    /// Store a value of this many bytes under the key.
    Set(usize),
    /// Delete the key.
    Delete,
}

/// The built-in service's requests for a client of a real server (`alloclab serve`):
/// the same operations, keys, key lengths and value lengths, and the same fill, for a
/// seed.
#[derive(Clone, Debug)]
pub struct Wire {
    requests: Requests,
    key_lens: Vec<u8>,
    filled: Vec<(usize, usize)>,
}

impl Wire {
    pub fn new(seed: u64) -> Self {
        let (key_lens, filled) = keys_and_fill(seed);
        Wire {
            requests: Requests(Rng::new(seed)),
            key_lens,
            filled,
        }
    }

    /// The keys that hold a value before the requests begin, with the value's length.
    pub fn filled(&self) -> &[(usize, usize)] {
        &self.filled
    }

    /// The next request: its operation and key.
    pub fn next_request(&mut self) -> (WireOp, usize) {
        let (op, key) = self.requests.next();
        let op = match op {
            Op::Get => WireOp::Get,
            Op::Set(len) => WireOp::Set(len),
            Op::Delete => WireOp::Delete,
        };
        (op, key)
    }

    /// Appends key `index`'s bytes to `out`.
    pub fn key(&self, index: usize, out: &mut Vec<u8>) {
        write_key(out, index, usize::from(self.key_lens[index]));
    }
}

/// A key-value store served at a fixed rate. `out-of-place`: every request allocates
/// its own key, value and reply buffers, as most servers do; `reuse`: those buffers are
/// allocated once per thread and reused, as a server with per-connection buffers does.
/// The stored items are allocated by every variant.
pub struct Service {
    reuse: bool,
    requests: Requests,
    seed: u64,
    period_ns: u64,
    /// Every key's length, drawn once.
    key_lens: Vec<u8>,
    /// Item `i`: key `i`'s bytes, then its value.
    store: Vec<Option<Vec<u8>>>,
    /// Bytes of keys and values the store holds.
    held: u64,
    key_buf: Vec<u8>,
    read_buf: Vec<u8>,
    reply: Vec<u8>,
    /// A fold of every reply, so that nothing is optimised away.
    acc: u64,
    stall: Option<Stall>,
    handled: u64,
}

impl Service {
    /// A store of [`KEYS`] keys, [`FILLED_PERCENT`] of them holding a value, served at
    /// `rate_per_s` requests per second on each of `threads` threads' shares.
    pub fn new(variant: Variant, rate_per_s: usize, threads: u32, seed: u64) -> Self {
        let (key_lens, filled) = keys_and_fill(seed);
        let reuse = variant == Variant::Reuse;
        let mut s = Service {
            reuse,
            requests: Requests(Rng::new(seed)),
            seed,
            period_ns: (1e9 * f64::from(threads.max(1)) / rate_per_s.max(1) as f64) as u64,
            key_lens,
            store: (0..KEYS).map(|_| None).collect(),
            held: 0,
            key_buf: Vec::with_capacity(if reuse { MAX_KEY } else { 0 }),
            read_buf: Vec::with_capacity(if reuse { MAX_VALUE } else { 0 }),
            reply: Vec::with_capacity(if reuse { MAX_VALUE + REPLY_FRAME } else { 0 }),
            acc: 0,
            stall: None,
            handled: 0,
        };
        for (key, len) in filled {
            s.set(key, len);
        }
        s
    }

    /// Makes every `stall.every`-th request sleep `stall.ns` (tests of the corrected
    /// latency only).
    pub fn with_stall(mut self, stall: Option<Stall>) -> Self {
        self.stall = stall;
        self
    }

    /// Stores a value of `len` bytes under `key`: the value read into a buffer, then
    /// copied into the item with the key, the old item freed.
    fn set(&mut self, key: usize, len: usize) {
        let klen = usize::from(self.key_lens[key]);
        let fill = (key as u8) | 1;
        let mut item = Vec::with_capacity(klen + len);
        if self.reuse {
            self.read_buf.clear();
            self.read_buf.resize(len, fill);
            write_key(&mut item, key, klen);
            item.extend_from_slice(&self.read_buf);
        } else {
            let mut read = Vec::with_capacity(len);
            read.resize(len, fill);
            write_key(&mut item, key, klen);
            item.extend_from_slice(&read);
        }
        self.held += item.len() as u64;
        if let Some(old) = self.store[key].replace(item) {
            self.held -= old.len() as u64;
        }
    }

    /// Answers one request.
    fn handle(&mut self, op: Op, key: usize) {
        let klen = usize::from(self.key_lens[key]);
        // The request's key, as parsed from the wire.
        let mut parsed = Vec::new();
        let wire_key: &mut Vec<u8> = if self.reuse {
            self.key_buf.clear();
            &mut self.key_buf
        } else {
            parsed.reserve_exact(klen);
            &mut parsed
        };
        write_key(wire_key, key, klen);
        let key_hash = wire_key
            .iter()
            .fold(0u64, |h, &b| h.rotate_left(5) ^ u64::from(b));
        match op {
            Op::Get => {
                let Some(item) = &self.store[key] else {
                    self.acc = self.acc.rotate_left(1) ^ key_hash;
                    return;
                };
                let value = &item[klen..];
                let folded = if self.reuse {
                    self.reply.clear();
                    self.reply
                        .extend_from_slice(&(value.len() as u64).to_le_bytes());
                    self.reply.extend_from_slice(value);
                    reply_fold(black_box(&self.reply))
                } else {
                    let mut reply = Vec::with_capacity(value.len() + REPLY_FRAME);
                    reply.extend_from_slice(&(value.len() as u64).to_le_bytes());
                    reply.extend_from_slice(value);
                    reply_fold(black_box(&reply))
                };
                self.acc = self.acc.rotate_left(1) ^ folded ^ key_hash;
            }
            Op::Set(len) => {
                self.set(key, len);
                self.acc = self.acc.rotate_left(1) ^ key_hash ^ len as u64;
            }
            Op::Delete => {
                if let Some(old) = self.store[key].take() {
                    self.held -= old.len() as u64;
                }
                self.acc = self.acc.rotate_left(1) ^ key_hash;
            }
        }
    }
}

/// A reply's length and its first and last bytes.
fn reply_fold(reply: &[u8]) -> u64 {
    let first = reply.get(8).copied().unwrap_or(0);
    let last = reply.last().copied().unwrap_or(0);
    reply.len() as u64 ^ (u64::from(first) << 32) ^ (u64::from(last) << 40)
}

impl crate::worker::kernel::Kernel for Service {
    fn iterate(&mut self) {
        let (op, key) = self.requests.next();
        self.handle(op, key);
        self.handled += 1;
        if let Some(s) = self.stall {
            if s.every > 0 && self.handled.is_multiple_of(s.every) {
                std::thread::sleep(std::time::Duration::from_nanos(s.ns));
            }
        }
        black_box(self.acc);
    }

    /// The same for every worker whatever it has served: the first 4,096 requests of
    /// the seed's stream answered by a fresh store of this variant (every item's key
    /// checked on the way), folded.
    fn checksum(&mut self) -> u64 {
        let mut fresh = Service::new(
            if self.reuse {
                Variant::Reuse
            } else {
                Variant::OutOfPlace
            },
            1,
            1,
            self.seed,
        );
        for _ in 0..4096 {
            let (op, key) = fresh.requests.next();
            fresh.handle(op, key);
        }
        let mut check = Vec::with_capacity(MAX_KEY);
        for (key, item) in fresh.store.iter().enumerate() {
            if let Some(item) = item {
                check.clear();
                let klen = usize::from(fresh.key_lens[key]);
                write_key(&mut check, key, klen);
                if item[..klen] != check[..] {
                    return 0;
                }
            }
        }
        fresh.acc ^ fresh.held
    }

    fn pace_ns(&self) -> Option<u64> {
        Some(self.period_ns)
    }

    fn held_bytes(&self) -> Option<u64> {
        Some(self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::kernel::Kernel;

    #[test]
    fn etc_value_sizes_have_their_published_median_and_the_large_share() {
        // The generalized Pareto's median: σ/k · (2^k − 1) = 169.6 bytes.
        let mut rng = Rng::new(7);
        let mut v: Vec<usize> = (0..200_000).map(|_| value_len(&mut rng)).collect();
        v.sort_unstable();
        let median = v[v.len() / 2];
        assert!((160..=180).contains(&median), "median {median}");
        let large = v.iter().filter(|&&x| x >= LARGE_MIN).count() as f64 / v.len() as f64;
        assert!((0.004..0.006).contains(&large), "large share {large}");
        assert!(v.iter().all(|&x| (1..=MAX_VALUE).contains(&x)));
    }

    #[test]
    fn etc_key_sizes_sit_around_their_location() {
        let mut rng = Rng::new(9);
        let mut k: Vec<usize> = (0..100_000).map(|_| key_len(&mut rng)).collect();
        k.sort_unstable();
        // The GEV's median: μ + σ/ξ · ((ln 2)^−ξ − 1) = 33.8.
        assert!(
            (32..=35).contains(&k[k.len() / 2]),
            "median {}",
            k[k.len() / 2]
        );
    }

    #[test]
    fn the_store_keeps_count_of_what_it_holds_and_both_variants_answer_alike() {
        let mut a = Service::new(Variant::OutOfPlace, 1000, 1, 3);
        let mut b = Service::new(Variant::Reuse, 1000, 1, 3);
        for _ in 0..20_000 {
            a.iterate();
            b.iterate();
        }
        let held: u64 = a.store.iter().flatten().map(|i| i.len() as u64).sum();
        assert_eq!(a.held, held);
        assert_eq!((a.acc, a.held), (b.acc, b.held));
        assert_eq!(a.checksum(), b.checksum());
        assert_ne!(a.checksum(), 0);
        assert_eq!(a.pace_ns(), Some(1_000_000));
    }
}
