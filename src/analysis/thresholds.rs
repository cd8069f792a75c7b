//! The allocator thresholds known to sit behind cliffs, and the matching of a cliff (a
//! change of faults or memory syscalls between two neighbouring sizes) against them.
//!
//! A cliff is given as the sizes either side of it in elements; the buffer the workload
//! allocates per element is an f64 (8 bytes). A threshold *explains* a cliff when the
//! request size at which the allocator crosses it lies between the two sides (within
//! 3 %, for a sweep's unbisected jumps whose sides are a doubling apart). Where a
//! threshold's crossing point is computed (jemalloc's size classes with their page of
//! padding, glibc's mmapped chunk rounding) the predicted element count is given, so that
//! a bisected cliff can be checked against it to the element. A cliff no known threshold
//! explains says so, with the nearest one.
//!
//! Sources: glibc's malloc.c (`DEFAULT_MMAP_THRESHOLD` 128 KiB, `DEFAULT_TRIM_THRESHOLD`
//! 128 KiB, `DEFAULT_MMAP_THRESHOLD_MAX` 4 MiB × sizeof(long) = 32 MiB on 64-bit, the
//! dynamic thresholds set in `free` when an mmapped chunk is released); jemalloc's
//! `opt_oversize_threshold` (8 MiB), its size classes (four per doubling above 16 KiB)
//! and the page of `sz_large_pad` it adds to large requests when `cache_oblivious` is on
//! (the default).

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const PAGE: u64 = 4096;
/// Bytes per element of the buffers the lab's workloads allocate (f64).
pub const BYTES_PER_ELEMENT: u64 = 8;

/// One known threshold of an allocator.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// The allocator's name for it, with the value: "glibc's M_MMAP_THRESHOLD (128 KiB)".
    pub name: String,
    /// What crossing it does.
    pub effect: &'static str,
    /// The smallest request (bytes) that is on the far side of it.
    pub request_bytes: u64,
    /// How far beyond `request_bytes` the crossing may lie (0: exactly there). Where a
    /// rule is known only to a window — M_TOP_PAD's, whose page of remainder the heap's
    /// history sets — the crossing is somewhere from `request_bytes` to this many bytes
    /// more.
    pub window_bytes: u64,
    /// Bytes of one buffer per element of the size (8 for the lab's f64 arrays; a
    /// program's, given to `sweep --bytes-per-element`).
    pub per_element: u64,
    /// The knob that moves it, as a spec fragment with a value twice the threshold's.
    pub moved_by: Option<String>,
    /// Why no knob moves it, where none does.
    pub unmovable: Option<&'static str>,
    /// A rule for where a storm starts (from no faults or calls): it explains a rise from
    /// nothing, not a step within a level that is already there.
    pub onset_only: bool,
}

impl Threshold {
    /// The first element count on the far side by the rule, and the last one it may be
    /// (the same for an exact rule).
    pub fn elements(&self) -> (u64, u64) {
        (
            self.request_bytes.div_ceil(self.per_element),
            (self.request_bytes + self.window_bytes).div_ceil(self.per_element),
        )
    }

    /// The rule's crossing point as words: "916,993" or "8,192 to 8,448".
    pub fn predicted_text(&self) -> String {
        let g = |n: u64| crate::fmt::group_thousands(n as i64);
        match self.elements() {
            (lo, hi) if lo == hi => g(lo),
            (lo, hi) => format!("{} to {}", g(lo), g(hi)),
        }
    }

    /// "predicted from 916,993 elements", or for a window "predicted from 8,192 to 8,448
    /// elements (where in that window, the heap's history decides)".
    pub fn predicted_phrase(&self) -> String {
        let (lo, hi) = self.elements();
        if lo == hi {
            format!("predicted from {} elements", self.predicted_text())
        } else {
            format!(
                "predicted from {} elements; where in that window, the heap's history decides",
                self.predicted_text()
            )
        }
    }

    /// Whether a change between `below` and `above` elements (the last size on the near
    /// side, the first on the far side) can be this threshold's crossing.
    pub fn holds(&self, below: u64, above: u64) -> bool {
        let (lo, hi) = self.elements();
        below < hi && lo <= above
    }
}

/// How a cliff relates to the known thresholds of its allocator.
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// A threshold whose crossing point lies between the cliff's two sides.
    At {
        threshold: Threshold,
        /// The first element count on the far side: `request_bytes / 8`, rounded up.
        predicted_elements: u64,
    },
    /// A threshold within 3 % of the cliff whose computed crossing point is outside it:
    /// near, not explained to the element.
    Near {
        threshold: Threshold,
        predicted_elements: u64,
    },
    /// None lies between them; the nearest, and how far the cliff is from it (the
    /// cliff's size over the threshold's crossing point).
    Unexplained { nearest: Option<(Threshold, f64)> },
}

impl Cause {
    /// One sentence for a page: what the cliff is at, or that nothing known is.
    pub fn sentence(&self) -> String {
        match self {
            Cause::At { threshold, .. } => format!(
                "{}: {} ({}){}",
                threshold.name,
                threshold.effect,
                threshold.predicted_phrase(),
                match (&threshold.moved_by, threshold.unmovable) {
                    (Some(k), _) => format!("; {k} moves it"),
                    (None, Some(why)) => format!("; {why}"),
                    (None, None) => String::new(),
                }
            ),
            Cause::Near { threshold, .. } => format!(
                "near {} ({}), whose crossing point is computed at {} elements, outside the cliff: not explained to the element",
                threshold.name,
                threshold.effect,
                threshold.predicted_text()
            ),
            Cause::Unexplained { nearest: Some((t, ratio)) } => format!(
                "no known threshold of this allocator is at this size: the nearest, {}, is crossed from {} elements ({ratio:.2}x from the cliff)",
                t.name,
                t.predicted_text()
            ),
            Cause::Unexplained { nearest: None } => {
                "no known threshold of this allocator is listed".to_string()
            }
        }
    }
}

impl Cause {
    /// A clause for a cliff's line: "; at jemalloc's oversize_threshold (8.0 MiB),
    /// predicted from 916,993 elements", "; near …", or nothing where none is known.
    pub fn short(&self) -> String {
        match self {
            Cause::At { threshold, .. } => format!(
                "; at {}, {}{}",
                threshold.name,
                threshold.predicted_phrase(),
                match (&threshold.moved_by, threshold.unmovable) {
                    (None, Some(why)) => format!("; {why}"),
                    _ => String::new(),
                }
            ),
            Cause::Near { threshold, .. } => format!(
                "; near {} (its rule: from {} elements)",
                threshold.name,
                threshold.predicted_text()
            ),
            Cause::Unexplained { .. } => "; at no known threshold of this allocator".into(),
        }
    }

    /// Whether a confirmation that moved the threshold named `moved` proves this cause
    /// (a cliffs.json of an earlier version may hold one that moved another: it is not
    /// this cause's proof).
    pub fn proved_by(&self, moved: &str) -> bool {
        match self {
            Cause::At { threshold, .. } | Cause::Near { threshold, .. } => moved == threshold.name,
            Cause::Unexplained { .. } => false,
        }
    }

    /// The threshold a cliff is at (or near) and how to move it, for a confirmation.
    pub fn movable(&self) -> Option<(&Threshold, &str)> {
        match self {
            Cause::At { threshold, .. } | Cause::Near { threshold, .. } => {
                Some((threshold, threshold.moved_by.as_deref()?))
            }
            Cause::Unexplained { .. } => None,
        }
    }
}

/// The threshold of `label` that `moved` names (the same kind: its name up to the
/// value), with that label's knobs, for a workload of `live` buffers.
pub fn predicted_under(label: &str, live: Option<u64>, moved: &Threshold) -> Option<Threshold> {
    let kind = |t: &Threshold| t.name.split(" (").next().unwrap_or("").to_string();
    let known = known_per(label, live, moved.per_element);
    // The same kind; else the value the label sets (glibc's set mmap_threshold replaces
    // both the defaults and the 32 MiB ceiling).
    let same = known.iter().position(|t| kind(t) == kind(moved));
    let set = known.iter().position(|t| t.name.contains(", set)"));
    same.or(set).map(|i| known[i].clone())
}

/// A size in bytes from a knob value: `64M`, `16MiB`, `131072`, `1G`.
fn bytes(value: &str) -> Option<u64> {
    let v = value.trim();
    let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
    let n: u64 = digits.parse().ok()?;
    let unit = v[digits.len()..].trim().to_ascii_lowercase();
    let factor = match unit.trim_end_matches("ib").trim_end_matches('b') {
        "" => 1,
        "k" => KIB,
        "m" => MIB,
        "g" => 1024 * MIB,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// The allocator of a cell label ("system", "jemalloc:oversize_threshold=16M thp=never")
/// and its knobs.
fn parse_label(label: &str) -> (String, Vec<(String, String)>) {
    let spec = label.split(' ').next().unwrap_or(label);
    let (name, knobs) = spec.split_once(':').unwrap_or((spec, ""));
    let knobs = knobs
        .split(',')
        .filter_map(|k| k.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    (name.to_string(), knobs)
}

fn human(b: u64) -> String {
    crate::fmt::human_bytes(b)
}

/// jemalloc's size class of a large request: four classes per doubling (a class of
/// 2^k + m · 2^(k−2), m = 1…4, for requests above 2^k).
fn jemalloc_class(bytes: u64) -> u64 {
    if bytes <= 16 * KIB {
        return bytes.next_power_of_two();
    }
    let k = 63 - (bytes - 1).leading_zeros(); // 2^k < bytes ≤ 2^(k+1)
    let step = 1u64 << (k - 2);
    bytes.div_ceil(step) * step
}

/// The largest size class below `t` (for `t` above 16 KiB).
fn jemalloc_class_below(t: u64) -> u64 {
    let c = jemalloc_class(t.max(16 * KIB + 1));
    let k = 63 - (c - 1).leading_zeros();
    let step = 1u64 << (k - 2);
    let below = c - step;
    if below < t {
        below
    } else {
        below - step
    }
}

/// The known thresholds of the allocator of `label`, with the values its knobs set, for a
/// workload that holds `live` f64 buffers of the size at once (None: not known, and the
/// rules that count buffers are left out).
pub fn known(label: &str, live: Option<u64>) -> Vec<Threshold> {
    known_per(label, live, BYTES_PER_ELEMENT)
}

/// [`known`] for buffers of `per_element` bytes per element of the size.
pub fn known_per(label: &str, live: Option<u64>, per_element: u64) -> Vec<Threshold> {
    let mut v = thresholds_of(label, live);
    for t in &mut v {
        t.per_element = per_element.max(1);
    }
    v
}

fn thresholds_of(label: &str, live: Option<u64>) -> Vec<Threshold> {
    let (name, knobs) = parse_label(label);
    let knob = |k: &str| {
        knobs
            .iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| bytes(v))
    };
    match name.as_str() {
        "system" => {
            let mut v = Vec::new();
            let trim = knob("trim_threshold");
            // A moved mmap threshold keeps the label's trim threshold; unset, the trims
            // are turned off so that only the mmap threshold decides (glibc's set mmap
            // threshold stops the sliding, which leaves the trim threshold at 128 KiB and
            // trims every heap buffer that the slide would have kept).
            let with_trim = |mmap: u64| {
                format!(
                    "system:mmap_threshold={},trim_threshold={}",
                    human_knob(mmap),
                    trim.map(human_knob).unwrap_or_else(|| "1G".into())
                )
            };
            match knob("mmap_threshold") {
                Some(t) => v.push(Threshold {
                    name: format!("glibc's M_MMAP_THRESHOLD ({}, set)", human(t)),
                    effect: "a buffer this large is mmapped and unmapped every time (a set value does not slide)",
                    // mmapped when the chunk (request + 8, rounded up to 16) reaches it.
                    request_bytes: t.saturating_sub(23),
                    window_bytes: 0,
                    per_element: BYTES_PER_ELEMENT,
                    // glibc refuses a set threshold above 32 MiB: doubled below it,
                    // halved from it.
                    moved_by: Some(with_trim(if 2 * t <= 32 * MIB { 2 * t } else { t / 2 })),
                    unmovable: None,
                    onset_only: false,
                }),
                None => {
                    v.push(Threshold {
                        name: "glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (128 KiB defaults)".into(),
                        effect: "a buffer this large is first mmapped; freeing it slides the mmap threshold up to its mmapped size and the trim threshold to twice that, and it is served from the heap from then on",
                        // The chunk (request + 8, rounded up to 16) reaches 128 KiB.
                        request_bytes: 128 * KIB - 23,
                        window_bytes: 0,
                        per_element: BYTES_PER_ELEMENT,
                        moved_by: Some(with_trim(256 * KIB)),
                        unmovable: None,
                        onset_only: false,
                    });
                    // The sliding stops at DEFAULT_MMAP_THRESHOLD_MAX: `free` slides the
                    // threshold only when the released chunk's size *with its flag bits*
                    // (chunksize_nomask, IS_MMAPPED = 2) is at most 32 MiB, so a chunk
                    // of exactly 32 MiB never slides it. The mmapped size is (request + 8,
                    // rounded up to 16) + 8, rounded up to a page: 32 MiB from a request
                    // of 32 MiB − 4 KiB − 23 bytes on (4,193,790 elements, bisected to
                    // the element on this machine kind).
                    v.push(Threshold {
                        name: "glibc's DEFAULT_MMAP_THRESHOLD_MAX (32 MiB on 64-bit)".into(),
                        effect: "the mmap threshold slides no higher, so a buffer this large is mmapped and unmapped every iteration",
                        request_bytes: 32 * MIB - PAGE - 23,
                        window_bytes: 0,
                        per_element: BYTES_PER_ELEMENT,
                        // A set threshold may not exceed 32 MiB (glibc refuses more): it
                        // is moved down, where the cliff must follow.
                        moved_by: Some(with_trim(16 * MIB)),
                        unmovable: None,
                        onset_only: false,
                    });
                }
            }
            if let Some(top) = top_pad_window(knob("top_pad"), trim, knob("mmap_threshold"), live) {
                v.push(top);
            }
            if knobs.is_empty() && live == Some(2) {
                v.push(after_the_slide());
            }
            if let Some(t) = trim {
                v.push(Threshold {
                    name: format!("glibc's M_TRIM_THRESHOLD ({}, set)", human(t)),
                    effect:
                        "more free memory than this at the top of the heap is given back with brk",
                    request_bytes: t,
                    window_bytes: 0,
                    per_element: BYTES_PER_ELEMENT,
                    moved_by: Some(format!("system:trim_threshold={}", human_knob(2 * t))),
                    unmovable: None,
                    onset_only: false,
                });
            }
            v
        }
        "jemalloc" => {
            let t = knob("oversize_threshold").unwrap_or(8 * MIB);
            // The largest class below the threshold; a request with its page of padding
            // beyond it rounds up to a class at or above the threshold.
            let request = (jemalloc_class_below(t) + 1).saturating_sub(PAGE);
            vec![Threshold {
                name: format!(
                    "jemalloc's oversize_threshold ({}{})",
                    human(t),
                    if knob("oversize_threshold").is_some() { ", set" } else { "" }
                ),
                effect: "the freed buffer, merged with the free extents beside it in its thread's arena (not the huge arena: the request is below the threshold), reaches it, and jemalloc purges that extent at once (extent_maximally_purge) instead of letting it decay: its pages are given back with madvise and faulted in again",
                request_bytes: request,
                window_bytes: 0,
                per_element: BYTES_PER_ELEMENT,
                moved_by: Some(format!("jemalloc:oversize_threshold={}", human_knob(2 * t))),
                unmovable: None,
                onset_only: false,
            }]
        }
        _ => Vec::new(),
    }
}

/// glibc's smallest chunk (MINSIZE), and one byte more: `systrim` keeps the top's
/// `MINSIZE + 1` bytes besides the pad.
const MINSIZE: u64 = 32;

/// Where the buffers of an iteration no longer fit in the top of glibc's heap that the
/// last trim left — the onset of the trim storm of out-of-place (grow with brk, fault
/// in, trim with brk, every iteration).
///
/// The rule, from malloc.c: `systrim(M_TOP_PAD)` leaves a top of `pad + MINSIZE + 1 + m`
/// bytes, where `m` (less than a page) is what the page rounding of the trim leaves;
/// a heap never trimmed has a top below the trim threshold. An iteration whose `live`
/// chunks (each the request + 8, rounded up to 16) and MINSIZE no longer fit in that top
/// grows the heap; the frees then leave more than the trim threshold at the top, and
/// it is trimmed back, with the same `m` (the growth is rounded to the page as the trim
/// is). So the storm starts where `live` chunks reach `pad + 2 + m`, and `m` — a page
/// wide, set by the heap's history before the loop — is known only to its window; where
/// the trim threshold exceeds the pad by more than a page, the window reaches up to it.
/// Measured starts (out-of-place, two buffers): 8,334 and 8,338 by defaults (rule: 8,192
/// to 8,448); 16,502 with `top_pad=256K,trim_threshold=256K,mmap_threshold=1M` (16,384
/// to 16,640); 4,226 with `top_pad=64K,trim_threshold=64K` (4,096 to 4,352); 7,954 with
/// `top_pad=64K` (4,096 to 8,188); 2,313 with `top_pad=32K,trim_threshold=64K` (2,048 to
/// 4,092).
fn top_pad_window(
    top_pad: Option<u64>,
    trim: Option<u64>,
    mmap: Option<u64>,
    live: Option<u64>,
) -> Option<Threshold> {
    let k = live.filter(|&k| k > 0)?;
    let pad = top_pad.unwrap_or(128 * KIB);
    let trim_now = trim.unwrap_or(128 * KIB);
    // The smallest chunk of which `k` reach `total` bytes.
    let chunk = |total: u64| total.div_ceil(k).div_ceil(16) * 16;
    let lowest = chunk(pad + 2);
    // The largest top a trim (or a heap never trimmed) leaves before the loop.
    let top_max = (pad + MINSIZE + 1 + PAGE).max(trim_now) - 1;
    let highest = chunk(top_max + 1 - MINSIZE);
    // Only while the buffers are served from the heap (glibc mmaps a chunk that reaches
    // the mmap threshold: 128 KiB until a free slides it).
    if highest >= mmap.unwrap_or(128 * KIB) {
        return None;
    }
    // Moved: twice the pad, with the trim threshold at the pad (a window of one page)
    // and the mmap threshold set far above the buffers (so that they stay on the heap).
    let moved = 2 * pad;
    let moved_by = (4 * moved <= 32 * MIB).then(|| {
        format!(
            "system:mmap_threshold={},top_pad={},trim_threshold={}",
            human_knob(4 * moved),
            human_knob(moved),
            human_knob(moved)
        )
    });
    Some(Threshold {
        name: format!(
            "glibc's M_TOP_PAD ({}{})",
            human(pad),
            if top_pad.is_some() {
                ", set"
            } else {
                " default"
            }
        ),
        effect: if k == 1 {
            "the buffer no longer fits in the top of the heap that the last trim left (M_TOP_PAD and less than a page, which the heap's history sets), so every iteration grows the heap with brk and faults the new pages in, and the free trims it back"
        } else {
            "the buffers of an iteration no longer fit in the top of the heap that the last trim left (M_TOP_PAD and less than a page, which the heap's history sets), so every iteration grows the heap with brk and faults the new pages in, and the frees trim it back"
        },
        request_bytes: lowest - 23,
        window_bytes: highest - lowest,
        per_element: BYTES_PER_ELEMENT,
        moved_by,
        unmovable: None,
        onset_only: true,
    })
}

/// The out-of-place storm's return after glibc's mmap threshold has slid (defaults only).
///
/// From 128 KiB per buffer the first iteration mmaps both buffers; freeing them slides the
/// mmap threshold above them and the trim threshold to twice that, and from then on they
/// come from the heap. The first grows it (`sysmalloc`: the chunk, M_TOP_PAD and MINSIZE
/// beyond the top, rounded up to the page), leaving a top of `pad + 32 + u`, `u` that
/// page rounding; the second fits in it while its chunk is at most `pad + u`, and then
/// the frees leave less than the slid trim threshold: no trim, no storm. A chunk beyond
/// it grows the heap a second time, the frees trim it, and the storm is back. `u` — less
/// than a page, set by the top the worker's start left — places it: the return is where
/// a chunk exceeds M_TOP_PAD by up to a page (16,384 to 16,894 elements of f64). Measured
/// (gdb on `sysmalloc` and `systrim`, libc6-dbg): a top of 86,049 bytes before the loop
/// predicts 16,640, measured 16,642; the sweeps' 16,520 and 16,525 and `alloclab cliff`'s
/// 16,780 lie inside. No knob moves it: setting M_TOP_PAD or any threshold turns the
/// sliding off (mallopt(3)), and the storm then runs on from 16,382 (measured with
/// `top_pad=129K` and `130K`: 66 faults per iteration, both buffers mmapped).
fn after_the_slide() -> Threshold {
    let pad = 128 * KIB;
    let lowest = pad + 16;
    let highest = pad + PAGE;
    Threshold {
        name: "glibc's M_TOP_PAD after the mmap threshold has slid (128 KiB default)".into(),
        effect: "with the mmap threshold slid above the buffers, the first buffer grows the heap by M_TOP_PAD and a page rounding, and the second no longer fits in what that leaves, so the frees trim the heap and every iteration grows it again (the storm is back)",
        request_bytes: lowest - 23,
        window_bytes: highest - lowest,
        per_element: BYTES_PER_ELEMENT,
        moved_by: None,
        unmovable: Some("no knob moves it: setting M_TOP_PAD or any of glibc's thresholds turns off the sliding it depends on (mallopt(3)), and the storm then runs on from 128 KiB"),
        onset_only: true,
    }
}

/// A byte count as a knob value: `16M`, `256K`, or bytes.
fn human_knob(b: u64) -> String {
    if b.is_multiple_of(MIB) {
        format!("{}M", b / MIB)
    } else if b.is_multiple_of(KIB) {
        format!("{}K", b / KIB)
    } else {
        b.to_string()
    }
}

/// The cause of a cliff of `label`'s cells between `below` and `above` elements (the
/// last size on the near side and the first on the far side), for a workload of `live`
/// buffers (`Workload::live_buffers`); `onset` says the change rises from nothing (below
/// the metric's threshold on the near side), which a storm's onset rule needs.
pub fn cause(label: &str, live: Option<u64>, onset: bool, below: u64, above: u64) -> Cause {
    cause_per(label, live, onset, BYTES_PER_ELEMENT, below, above)
}

/// [`cause`] for buffers of `per_element` bytes per element of the size (a program's).
pub fn cause_per(
    label: &str,
    live: Option<u64>,
    onset: bool,
    per_element: u64,
    below: u64,
    above: u64,
) -> Cause {
    // A storm's onset rule explains only a rise from nothing (`onset`).
    let known: Vec<Threshold> = known_per(label, live, per_element)
        .into_iter()
        .filter(|t| onset || !t.onset_only)
        .collect();
    if let Some(t) = known.iter().find(|t| t.holds(below, above)) {
        return Cause::At {
            threshold: t.clone(),
            predicted_elements: t.elements().0,
        };
    }
    // Within 3 % of the cliff: near it, but not where the threshold's arithmetic puts it.
    let mid = (below + above) as f64 / 2.0;
    if let Some(t) = known.iter().find(|t| {
        let (lo, hi) = t.elements();
        mid >= lo as f64 * 0.97 && mid <= hi as f64 * 1.03
    }) {
        return Cause::Near {
            threshold: t.clone(),
            predicted_elements: t.elements().0,
        };
    }
    let nearest = known
        .into_iter()
        .map(|t| {
            let r = above as f64 / t.elements().0.max(1) as f64;
            (t, r)
        })
        .min_by(|a, b| a.1.ln().abs().total_cmp(&b.1.ln().abs()));
    Cause::Unexplained { nearest }
}

/// Whether a change from `below_value` to `above_value` rises from nothing: below the
/// metric's `threshold` on the near side (an onset, as a storm's start is).
pub fn is_onset(threshold: f64, below_value: f64, above_value: f64) -> bool {
    below_value.abs() < threshold && above_value > below_value
}

/// The cause of a cliff that several variants share (their `live` buffers each): the
/// first that is at a threshold, else near one, else the first.
pub fn cause_of(label: &str, lives: &[Option<u64>], onset: bool, below: u64, above: u64) -> Cause {
    let all: Vec<Cause> = lives
        .iter()
        .map(|&l| cause(label, l, onset, below, above))
        .collect();
    let rank = |c: &Cause| match c {
        Cause::At { .. } => 0,
        Cause::Near { .. } => 1,
        Cause::Unexplained { .. } => 2,
    };
    all.into_iter()
        .min_by_key(rank)
        .unwrap_or_else(|| cause(label, None, onset, below, above))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live buffers of in-place and out-of-place.
    const ONE: Option<u64> = Some(1);
    const TWO: Option<u64> = Some(2);

    #[test]
    fn jemalloc_classes_are_four_per_doubling() {
        assert_eq!(jemalloc_class(7 * MIB), 7 * MIB);
        assert_eq!(jemalloc_class(7 * MIB + 1), 8 * MIB);
        assert_eq!(jemalloc_class(5 * MIB - 3), 5 * MIB);
        assert_eq!(jemalloc_class(9 * MIB), 10 * MIB);
        assert_eq!(jemalloc_class(15 * MIB), 16 * MIB);
        assert_eq!(jemalloc_class_below(8 * MIB), 7 * MIB);
        assert_eq!(jemalloc_class_below(16 * MIB), 14 * MIB);
        assert_eq!(jemalloc_class_below(9 * MIB), 8 * MIB);
        assert_eq!(jemalloc_class_below(10 * MIB), 8 * MIB);
    }

    /// The cliffs bisected on this machine kind (docs/cliff.md): jemalloc's purging from
    /// 917,058 elements (bisected to 75); glibc's mmap of every buffer from 4,193,790
    /// (bisected to the element); glibc's out-of-place storm from 8,332, its end at
    /// 16,382 and its return at 16,780.
    #[test]
    fn the_measured_cliffs_are_matched_to_their_thresholds_or_said_unexplained() {
        match cause("jemalloc", ONE, true, 916_983, 917_058) {
            Cause::At {
                threshold,
                predicted_elements,
            } => {
                assert!(
                    threshold.name.contains("oversize_threshold (8.0 MiB)"),
                    "{threshold:?}"
                );
                // 7 MiB − 4 KiB of request, plus the page of padding, is the 7 MiB
                // class; one byte more rounds up to 8 MiB.
                assert_eq!(predicted_elements, 916_993);
                assert_eq!(
                    threshold.moved_by.as_deref(),
                    Some("jemalloc:oversize_threshold=16M")
                );
            }
            other => panic!("{other:?}"),
        }
        // Moved: with oversize_threshold=16M the cliff is predicted at 14 MiB − 4 KiB.
        match cause(
            "jemalloc:oversize_threshold=16M",
            ONE,
            true,
            1_834_400,
            1_834_500,
        ) {
            Cause::At {
                predicted_elements, ..
            } => assert_eq!(predicted_elements, (14 * MIB - PAGE + 1).div_ceil(8)),
            other => panic!("{other:?}"),
        }
        // glibc's every-buffer mmap, to the element: 4,193,789 slides the threshold,
        // 4,193,790 (a 32 MiB mmapped chunk, 32 MiB + 2 with its IS_MMAPPED bit) does not.
        match cause("system", ONE, true, 4_193_789, 4_193_790) {
            Cause::At {
                threshold,
                predicted_elements,
            } => {
                assert!(threshold.name.contains("32 MiB"), "{threshold:?}");
                assert_eq!(predicted_elements, 4_193_790);
                assert_eq!(
                    threshold.moved_by.as_deref(),
                    Some("system:mmap_threshold=16M,trim_threshold=1G")
                );
            }
            other => panic!("{other:?}"),
        }
        // Moved: a set 16 MiB threshold mmaps from a chunk of 16 MiB on.
        assert!(matches!(
            cause(
                "system:mmap_threshold=16M,trim_threshold=1G",
                ONE,
                true,
                2_097_149,
                2_097_150
            ),
            Cause::At {
                predicted_elements: 2_097_150,
                ..
            }
        ));
        // The first buffer mmapped (a 128 KiB chunk) ends the small storm.
        match cause("system", ONE, true, 16_381, 16_382) {
            Cause::At {
                threshold,
                predicted_elements,
            } => {
                assert!(threshold.name.contains("128 KiB defaults"), "{threshold:?}");
                assert_eq!(predicted_elements, 16_382);
            }
            other => panic!("{other:?}"),
        }
        // The storm's onset is M_TOP_PAD's, for two buffers only (below).
        assert!(matches!(
            cause("system", ONE, true, 8_331, 8_332),
            Cause::Unexplained { .. }
        ));
        // Its return, for two buffers (out-of-place), is at M_TOP_PAD after the slide: in
        // the window a chunk beyond the pad by up to a page makes, with no knob to move it.
        for (below, above) in [
            (16_519, 16_520),
            (16_524, 16_525),
            (16_779, 16_780),
            (16_641, 16_642),
        ] {
            match cause("system", TWO, true, below, above) {
                Cause::At { threshold, .. } => {
                    assert!(
                        threshold.name.contains("after the mmap threshold has slid"),
                        "{threshold:?}"
                    );
                    assert_eq!(threshold.elements(), (16_384, 16_894));
                    assert!(threshold.moved_by.is_none());
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(cause("system", TWO, true, 16_519, 16_520)
            .sentence()
            .contains("no knob moves it"));
        // The stop stays at the 128 KiB thresholds; a knob set has no such rule.
        assert!(matches!(
            cause("system", TWO, true, 16_381, 16_382),
            Cause::At { threshold, .. } if threshold.name.contains("128 KiB defaults")
        ));
        assert!(known("system:top_pad=64K", TWO)
            .iter()
            .all(|t| !t.name.contains("after the mmap threshold has slid")));
        // For one buffer, its return at 16,780 is near the 128 KiB thresholds.
        assert!(matches!(
            cause("system", ONE, true, 16_779, 16_780),
            Cause::Near {
                predicted_elements: 16_382,
                ..
            }
        ));
        // The jemalloc jump of a quick sweep (4 MiB to 8 MiB per buffer) holds its
        // crossing point.
        assert!(matches!(
            cause("jemalloc", ONE, true, 524_288, 1_048_576),
            Cause::At { .. }
        ));
        // Far from every threshold: the nearest is named, with the distance.
        match cause("system", ONE, true, 1_000, 1_001) {
            Cause::Unexplained {
                nearest: Some((t, r)),
            } => {
                assert!(t.name.contains("128 KiB"), "{t:?}");
                assert!((r - 1_001.0 / 16_382.0).abs() < 1e-9, "{r}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            cause("mimalloc", ONE, true, 1000, 2000),
            Cause::Unexplained { nearest: None }
        );
        assert!(cause("mimalloc", ONE, true, 1000, 2000)
            .sentence()
            .contains("no known threshold"));
    }

    /// The out-of-place storm's onset, by defaults and with the knobs moved, against the
    /// starts `alloclab cliff` bisected on this machine kind (all inside their windows,
    /// none outside): the window is M_TOP_PAD plus the page the heap's history sets.
    #[test]
    fn the_storms_onset_is_m_top_pads_window_for_two_buffers() {
        let window = |label: &str| {
            known(label, TWO)
                .into_iter()
                .find(|t| t.name.starts_with("glibc's M_TOP_PAD"))
                .map(|t| t.elements())
        };
        // (label, the rule's window, the start measured).
        let cases = [
            ("system", (8_192, 8_448), 8_334),
            (
                "system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K",
                (16_384, 16_640),
                16_502,
            ),
            (
                "system:top_pad=64K,trim_threshold=64K",
                (4_096, 4_352),
                4_226,
            ),
            ("system:top_pad=64K", (4_096, 8_188), 7_954),
            (
                "system:top_pad=32K,trim_threshold=64K",
                (2_048, 4_092),
                2_313,
            ),
        ];
        for (label, expected, measured) in cases {
            let w = window(label).unwrap_or_else(|| panic!("{label}: no window"));
            assert_eq!(w, expected, "{label}");
            assert!(w.0 <= measured && measured <= w.1, "{label}: {measured}");
            match cause(label, TWO, true, measured - 1, measured) {
                Cause::At { threshold, .. } => {
                    assert!(
                        threshold.name.contains("M_TOP_PAD"),
                        "{label}: {threshold:?}"
                    )
                }
                other => panic!("{label}: {other:?}"),
            }
        }
        // By the rule's arithmetic, at its edges: 8,192 elements make two chunks of
        // 65,552 bytes, which reach a top of 128 KiB + 33 with MINSIZE; 8,191 do not.
        let t = known("system", TWO)
            .into_iter()
            .find(|t| t.name.starts_with("glibc's M_TOP_PAD"))
            .unwrap();
        assert!(t.holds(8_191, 8_192) && !t.holds(8_190, 8_191));
        assert!(t.holds(8_447, 8_448) && !t.holds(8_448, 8_449));
        // The default's knob moves it to a one-page window of its own, predicted anew.
        let moved = t.moved_by.clone().unwrap();
        assert_eq!(
            moved,
            "system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K"
        );
        let under = predicted_under(&moved, TWO, &t).unwrap();
        assert_eq!(under.elements(), (16_384, 16_640));
        assert_eq!(under.predicted_text(), "16,384 to 16,640");
        // One buffer (in-place) reaches the 128 KiB mmap threshold first: no window.
        assert!(known("system", ONE)
            .iter()
            .all(|t| !t.name.starts_with("glibc's M_TOP_PAD")));
        // A workload whose buffers the lab does not count has none; the trims turned off
        // (a trim threshold far above) have none.
        assert!(known("system", None)
            .iter()
            .all(|t| !t.name.starts_with("glibc's M_TOP_PAD")));
        assert!(known("system:mmap_threshold=16M,trim_threshold=1G", TWO)
            .iter()
            .all(|t| !t.name.starts_with("glibc's M_TOP_PAD")));
        // A step within a storm already under way is not its onset: not M_TOP_PAD's.
        assert!(matches!(
            cause("system", TWO, false, 8_337, 8_338),
            Cause::Unexplained { .. }
        ));
        assert!(is_onset(1.0, 0.0, 1.0) && !is_onset(1.0, 2.0, 3.0) && !is_onset(1.0, 32.0, 0.0));
        // A group of variants takes the cause any of them has.
        assert!(matches!(
            cause_of("system", &[ONE, TWO], true, 8_337, 8_338),
            Cause::At { .. }
        ));
        assert!(cause("system", TWO, true, 8_337, 8_338)
            .sentence()
            .contains("predicted from 8,192 to 8,448 elements; where in that window, the heap's history decides"));
    }

    #[test]
    fn knob_values_read_as_bytes() {
        assert_eq!(bytes("64M"), Some(64 * MIB));
        assert_eq!(bytes("16MiB"), Some(16 * MIB));
        assert_eq!(bytes("131072"), Some(131_072));
        assert_eq!(bytes("1G"), Some(1024 * MIB));
        assert_eq!(bytes("-1"), None);
        assert_eq!(human_knob(16 * MIB), "16M");
    }
}
