//! Layout: what the lab randomises in each process because the allocator does not decide
//! it (where the heap starts, the stack's and environment's offset), and what it records
//! because the allocator does decide it (where each hot buffer lands).
//!
//! A few-% gap between two cells that differ by an inert knob was where glibc's heap put
//! the output buffer: the worker's request and environment lengths set the heap's starting
//! offset, every process of a cell got the same one, and a buffer 16 bytes past a 32-byte
//! boundary runs 2–6 % slower. So every worker's request and environment now have one
//! length in every cell, and every process draws its own heap shift and environment
//! padding (Stabilizer, Curtsinger & Berger 2013; Mytkowicz et al. 2009): layout becomes
//! noise the intervals hold. The alignment of a block the allocator hands out is its own
//! behaviour and is measured, not randomised (`buffers` in the run record).

use serde::{Deserialize, Serialize};

/// The heap shift's range: 0 to this, exclusive, in [`STEP`] steps (glibc's malloc
/// alignment).
pub const HEAP_SHIFT_MAX: u32 = 4096;
/// What the heap shift's block holds beyond the shift: more than any block freed while
/// a worker starts, below glibc's mmap threshold (128 KiB at start).
pub const HEAP_FLOOR: usize = 64 * 1024;
/// The environment padding's range: 0 to this, exclusive, in [`STEP`] steps (the
/// kernel aligns the initial stack to 16 bytes).
pub const ENV_PAD_MAX: u32 = 4096;
/// The step of every draw.
pub const STEP: u32 = 16;
/// The environment variable that carries the padding (its value is that many bytes).
pub const PAD_ENV: &str = "ALLOCLAB_LAYOUT_PAD";
/// The bytes the variable environment of a worker (the allocator's settings and the
/// padding, names, '=' and NUL included) adds up to before its random part: the same in
/// every cell, so that a knob's setting moves nothing but the knob.
pub const ENV_BUDGET: usize = 1024;
/// A worker's request is padded with spaces to a multiple of this many bytes (one length
/// in every cell of a run, short of a request longer than it).
pub const REQUEST_LEN: usize = 2048;

/// One process's draw: what was randomised in it, kept in its record so that the run can
/// be replayed (`alloclab-<allocator> --request` with the same `layout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutDraw {
    /// Bytes allocated (and kept to the end) before anything of the workload: the heap's
    /// starting offset.
    pub heap_shift_bytes: u32,
    /// Bytes of environment padding beyond [`ENV_BUDGET`]: the stack's offset.
    pub env_pad_bytes: u32,
}

impl LayoutDraw {
    /// The next draw from `next` (a uniform 64-bit generator).
    pub fn draw(mut next: impl FnMut() -> u64) -> LayoutDraw {
        let mut pick = |max: u32| ((next() % u64::from(max / STEP)) as u32) * STEP;
        LayoutDraw {
            heap_shift_bytes: pick(HEAP_SHIFT_MAX),
            env_pad_bytes: pick(ENV_PAD_MAX),
        }
    }
}

/// Whether the lab randomises layout (the default) or holds it fixed (`--layout fixed`:
/// every process of a cell alike, as before; for measuring what randomising costs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LayoutMode {
    /// A heap shift and an environment padding drawn per process.
    #[default]
    Random,
    /// No shift, the padding's fixed part only.
    Fixed,
}

impl LayoutMode {
    /// The method line's words.
    pub fn words(self) -> &'static str {
        match self {
            LayoutMode::Random => "layout randomised per process (a heap shift of 0–4 KiB and an environment padding, each process's draw in its record)",
            LayoutMode::Fixed => "layout held fixed (--layout fixed: every process of a cell alike, its heap's offset a bias no interval covers)",
        }
    }
}

impl std::fmt::Display for LayoutMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LayoutMode::Random => "random",
            LayoutMode::Fixed => "fixed",
        })
    }
}

/// The padding variable's value that makes `entries` (the allocator's settings, each
/// `NAME=value`) and the padding add up to [`ENV_BUDGET`] plus `extra` bytes (none
/// beyond `extra` where the settings alone take the budget).
pub fn env_padding(entries: &[(String, String)], extra: u32) -> String {
    let used: usize = entries.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
    let own = PAD_ENV.len() + 2;
    let fill = ENV_BUDGET.saturating_sub(used + own) + extra as usize;
    "x".repeat(fill)
}

/// `json` padded with spaces (which JSON ignores) to a multiple of [`REQUEST_LEN`].
pub fn pad_request(mut json: String) -> String {
    let len = json.len().div_ceil(REQUEST_LEN).max(1) * REQUEST_LEN;
    let pad = len - json.len();
    json.extend(std::iter::repeat_n(' ', pad));
    json
}

/// What a hot buffer of the workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// An input array, allocated once before the measured phase.
    Input,
    /// A temporary that the iteration frees before its result.
    Temporary,
    /// The buffer that holds the iteration's result (the in-place variant's one
    /// temporary, the reuse variant's preallocated output).
    Output,
}

impl Role {
    /// Every role, in the order of the worker's slots.
    pub const ALL: [Role; 3] = [Role::Input, Role::Temporary, Role::Output];

    /// Its name in words and files.
    pub fn name(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Temporary => "temporary",
            Role::Output => "output",
        }
    }
}

/// Where the allocator put one kind of hot buffer over a process's life: every
/// allocation of it counted by its address modulo 64 (in 16-byte classes), and its
/// address modulo 4096 (a page).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferAlignment {
    /// What the buffer is.
    pub role: Role,
    /// The buffer's size in bytes (the largest of the role).
    pub bytes: u64,
    /// How many buffers of the role were allocated (warm-up and checksum included).
    pub allocations: u64,
    /// Allocations whose address was 0, 16, 32 and 48 bytes past a 64-byte boundary.
    pub mod_64: [u64; 4],
    /// The first allocation's address modulo 4096.
    pub first_mod_4096: u64,
    /// Whether every allocation had that same address modulo 4096.
    pub same_mod_4096: bool,
}

impl BufferAlignment {
    /// The offset past a 64-byte boundary (0, 16, 32 or 48) that most allocations had,
    /// and their share; None without an allocation. (glibc maps the first large block of
    /// a process and serves the later ones from its heap: the first may differ.)
    pub fn usual_mod_64(&self) -> Option<(u64, f64)> {
        let (i, n) = self
            .mod_64
            .iter()
            .enumerate()
            .max_by_key(|(i, n)| (**n, std::cmp::Reverse(*i)))?;
        (*n > 0).then(|| (i as u64 * 16, *n as f64 / self.allocations.max(1) as f64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_fall_on_sixteen_byte_steps_within_their_ranges_and_vary() {
        let mut rng = crate::analysis::stats::SplitMix(7);
        let draws: Vec<LayoutDraw> = (0..200)
            .map(|_| LayoutDraw::draw(|| rng.next_u64()))
            .collect();
        for d in &draws {
            assert_eq!(d.heap_shift_bytes % STEP, 0);
            assert_eq!(d.env_pad_bytes % STEP, 0);
            assert!(d.heap_shift_bytes < HEAP_SHIFT_MAX && d.env_pad_bytes < ENV_PAD_MAX);
        }
        // Both offsets modulo 32 and 64 are reached: the shift moves a heap block's
        // alignment both ways.
        for m in [32, 64] {
            let seen: std::collections::BTreeSet<u32> =
                draws.iter().map(|d| d.heap_shift_bytes % m).collect();
            assert_eq!(seen.len() as u32, m / STEP, "mod {m}: {seen:?}");
        }
    }

    #[test]
    fn the_settings_and_their_padding_take_one_length_whatever_the_knobs() {
        let len = |entries: &[(String, String)], extra: u32| {
            let pad = env_padding(entries, extra);
            entries
                .iter()
                .map(|(k, v)| k.len() + v.len() + 2)
                .sum::<usize>()
                + PAD_ENV.len()
                + pad.len()
                + 2
        };
        let none: Vec<(String, String)> = Vec::new();
        let knob = vec![(
            "GLIBC_TUNABLES".to_string(),
            "glibc.malloc.arena_max=8".to_string(),
        )];
        assert_eq!(len(&none, 0), ENV_BUDGET);
        assert_eq!(len(&knob, 0), ENV_BUDGET);
        assert_eq!(len(&knob, 160), ENV_BUDGET + 160);
    }

    #[test]
    fn requests_are_padded_to_one_length_and_still_parse() {
        let a = pad_request(r#"{"a":1}"#.to_string());
        let b = pad_request(r#"{"a":1,"knobs":["arena_max=8"]}"#.to_string());
        assert_eq!(a.len(), REQUEST_LEN);
        assert_eq!(a.len(), b.len());
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["a"], 1);
        assert_eq!(
            pad_request("x".repeat(REQUEST_LEN + 1)).len(),
            2 * REQUEST_LEN
        );
    }

    #[test]
    fn the_usual_offset_is_the_one_most_allocations_had() {
        let mut b = BufferAlignment {
            role: Role::Output,
            bytes: 8_000_000,
            allocations: 10,
            mod_64: [0, 10, 0, 0],
            first_mod_4096: 16,
            same_mod_4096: true,
        };
        assert_eq!(b.usual_mod_64(), Some((16, 1.0)));
        b.mod_64 = [1, 9, 0, 0];
        assert_eq!(b.usual_mod_64(), Some((16, 0.9)));
        b.mod_64 = [0; 4];
        assert_eq!(b.usual_mod_64(), None);
    }
}
