//! The lab's findings as data, computed once for every surface: a cell's counts as the
//! mechanism reads them, what moved between two cells and how the allocator made it
//! happen, a comparison in words, and the answer of a set of cells (per allocator, each
//! variant against in-place with its cause; per variant, the allocators against the
//! fastest, and what removes a cost) that the console, the pages and the reports render.

use crate::analysis::cells;
use crate::analysis::explain::describe;
use crate::analysis::stats::{Comparison, Verdict};
use crate::fmt::{fmt_count, human_bytes};
use crate::model::metric::{
    RunFigures, BRK, FAULTED_BYTES, HUGE_FAULTS, MADVISE, MINOR_FAULTS, MMAP, MUNMAP, RUN_BRK,
    RUN_MADVISE, RUN_MINOR_FAULTS, RUN_MMAP, RUN_MUNMAP,
};
use crate::model::record::Cell;
use crate::model::spec::{Choice, Variant};
use crate::model::summary::SummaryRow;

/// A cell's counts per iteration, as the mechanism reads them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    pub faults: f64,
    pub brk: f64,
    pub mmap: f64,
    pub munmap: f64,
    pub madvise: f64,
    /// The memory syscalls were not counted (`--counters off`, or no counter here): the
    /// call fields are 0 for want of a figure, and no sentence may say "no more calls".
    pub calls_uncounted: bool,
    /// The bytes the faults mapped in and how many of the faults mapped a huge page,
    /// where the kernel's huge-page count was read; None otherwise (every fault is then
    /// taken as a base page).
    pub faulted: Option<(f64, f64)>,
}

impl Counts {
    pub(crate) fn of(r: &SummaryRow) -> Self {
        Counts {
            calls_uncounted: r.per_iter[BRK].is_none(),
            faults: r.per_iter[MINOR_FAULTS].unwrap_or(0.0),
            brk: r.per_iter[BRK].unwrap_or(0.0),
            mmap: r.per_iter[MMAP].unwrap_or(0.0),
            munmap: r.per_iter[MUNMAP].unwrap_or(0.0),
            madvise: r.per_iter[MADVISE].unwrap_or(0.0),
            faulted: r.per_iter[FAULTED_BYTES].zip(r.per_iter[HUGE_FAULTS]),
        }
    }

    /// The bytes its faults mapped in: the kernel's figure where read, else a base page
    /// (4 KiB) per fault.
    fn bytes(&self) -> f64 {
        self.faulted.map_or(self.faults * 4096.0, |(b, _)| b)
    }

    /// The huge-page faults among its faults (0 where not read).
    fn huge(&self) -> f64 {
        self.faulted.map_or(0.0, |(_, h)| h)
    }

    /// A user's command's counts per run (medians over its runs), read as a cell's.
    pub(crate) fn of_run(f: &RunFigures) -> Self {
        Counts {
            calls_uncounted: f[RUN_BRK].is_none(),
            faults: f[RUN_MINOR_FAULTS].unwrap_or(0.0),
            brk: f[RUN_BRK].unwrap_or(0.0),
            mmap: f[RUN_MMAP].unwrap_or(0.0),
            munmap: f[RUN_MUNMAP].unwrap_or(0.0),
            madvise: f[RUN_MADVISE].unwrap_or(0.0),
            faulted: None,
        }
    }
}

/// The least huge-page faults per iteration that make a side's fewer faults a matter of
/// page size: one every other iteration.
const HUGE_FAULTS_NAMED: f64 = 0.5;

/// How a cell's counts say it gets its memory back every iteration, if they do.
fn how(c: Counts, allocator: &str) -> Option<&'static str> {
    if BRK.named(c.brk) && allocator.starts_with("system") {
        Some("glibc gives the top of the heap back with brk after the frees (a trim) and grows it again for the next iteration")
    } else if MADVISE.named(c.madvise) {
        Some("the freed pages are given back to the kernel with madvise and faulted in again")
    } else if MUNMAP.named(c.munmap) {
        Some("each buffer is mapped and unmapped again")
    } else if MINOR_FAULTS.named(c.faults) {
        Some("the pages are faulted in again")
    } else {
        None
    }
}

/// What the counts say moved between `base` and `other`, per iteration: more faults and
/// calls (and how the allocator makes them), fewer (and how the base made them), or
/// neither.
pub(crate) fn mechanism(base: Counts, other: Counts, allocator: &str) -> String {
    mechanism_against(base, other, allocator, "in place")
}

/// [`mechanism`] against a base named `against` ("in place", "with system's defaults").
pub(crate) fn mechanism_against(
    base: Counts,
    other: Counts,
    allocator: &str,
    against: &str,
) -> String {
    let faults = other.faults - base.faults;
    let calls = |sign: f64| -> Vec<String> {
        [
            ("brk", other.brk - base.brk),
            ("mmap", other.mmap - base.mmap),
            ("munmap", other.munmap - base.munmap),
            ("madvise", other.madvise - base.madvise),
        ]
        .iter()
        .filter(|(_, v)| sign * v >= BRK.named_from())
        .map(|(n, v)| format!("{} {n}", fmt_count(v.abs())))
        .collect()
    };
    let uncounted = base.calls_uncounted || other.calls_uncounted;
    let (more, fewer) = if uncounted {
        (Vec::new(), Vec::new())
    } else {
        (calls(1.0), calls(-1.0))
    };
    let listed = |c: &[String], none: &str| {
        if uncounted {
            "memory syscalls not counted".to_string()
        } else if c.is_empty() {
            none.to_string()
        } else {
            c.join(", ")
        }
    };
    // Fewer (or more) faults that fault in as much memory or more: one side's faults map
    // huge pages, so each maps 2 MiB where the other's map 4 KiB. The memory is still
    // faulted in (and zeroed) every iteration; only the number of faults moved.
    let (fewer_side, more_side) = if faults < 0.0 {
        (other, base)
    } else {
        (base, other)
    };
    if faults.abs() >= MINOR_FAULTS.named_from()
        && fewer_side.huge() >= HUGE_FAULTS_NAMED
        && fewer_side.bytes() >= 0.75 * more_side.bytes()
    {
        let whose = if faults < 0.0 {
            "its faults".to_string()
        } else {
            format!("the faults {against}")
        };
        return format!(
            "{} {} page faults per iteration, but {} faulted in against {}: {} of {whose} map a huge page each, so as much memory is faulted in with fewer, larger faults; {}",
            fmt_count(faults.abs()),
            if faults < 0.0 { "fewer" } else { "more" },
            human_bytes(other.bytes().max(0.0) as u64),
            human_bytes(base.bytes().max(0.0) as u64),
            fmt_count(fewer_side.huge()),
            how(fewer_side, allocator)
                .or(how(more_side, allocator))
                .unwrap_or("the pages are faulted in again")
        );
    }
    if faults >= MINOR_FAULTS.named_from() {
        return format!(
            "{} more page faults ({} faulted in again) and {} per iteration: {}",
            fmt_count(faults),
            human_bytes((other.bytes() - base.bytes()).max(0.0) as u64),
            listed(&more, "no more memory syscalls"),
            how(other, allocator).unwrap_or("the pages are faulted in again")
        );
    }
    if faults <= -MINOR_FAULTS.named_from() {
        return format!(
            "{} fewer page faults ({} not faulted in again) and {} per iteration: {against}, {}",
            fmt_count(-faults),
            human_bytes((base.bytes() - other.bytes()).max(0.0) as u64),
            listed(&fewer, "no fewer memory syscalls"),
            how(base, allocator).unwrap_or("the pages are faulted in again")
        );
    }
    // Calls without faults: the counts show the calls, nothing faulted in again.
    if !more.is_empty() || !fewer.is_empty() {
        return format!(
            "{}{}{} per iteration, and no difference in page faults",
            listed(&more, ""),
            if more.is_empty() || fewer.is_empty() {
                ""
            } else {
                " more and "
            },
            if fewer.is_empty() {
                " more".to_string()
            } else {
                format!("{} fewer", fewer.join(", "))
            }
        );
    }
    if uncounted {
        return format!("the same page faults as {against} (memory syscalls not counted): the counts do not explain the difference");
    }
    format!("the same page faults and memory syscalls as {against}: the counts do not explain the difference")
}

/// What the counts say moved between two whole runs of a program, per run: the
/// difference in page faults and the memory syscalls that differ (by at least one call and
/// a tenth), and how the allocator gives memory back where one kind of call explains it.
/// Unlike [`mechanism`] (a loop whose every iteration repeats), a run's counts include
/// its start and its growth, so the reading is of the differences only.
pub fn run_difference(
    base: Counts,
    other: Counts,
    allocator: &str,
    base_allocator: &str,
) -> Option<String> {
    // Medians of whole counts: whole numbers without decimals.
    let whole = |v: f64| {
        if v.fract() == 0.0 {
            crate::fmt::group_thousands(v as i64)
        } else {
            fmt_count(v)
        }
    };
    let faults = other.faults - base.faults;
    let named = |d: f64, a: f64, b: f64| d.abs() >= 1.0 && d.abs() >= 0.1 * a.abs().max(b.abs());
    let calls: Vec<(&str, f64)> = [
        ("brk", other.brk, base.brk),
        ("mmap", other.mmap, base.mmap),
        ("munmap", other.munmap, base.munmap),
        ("madvise", other.madvise, base.madvise),
    ]
    .into_iter()
    .filter(|(_, a, b)| named(a - b, *a, *b))
    .map(|(n, a, b)| (n, a - b))
    .collect();
    let faults_named = named(faults, other.faults, base.faults) && faults.abs() >= 2.0;
    if !faults_named && calls.is_empty() {
        return None;
    }
    let listed: Vec<String> = calls
        .iter()
        .map(|(n, d)| {
            format!(
                "{} {} {n}",
                whole(d.abs()),
                if *d > 0.0 { "more" } else { "fewer" }
            )
        })
        .collect();
    let mut s = if faults_named {
        format!(
            "{} {} page faults per run ({} {})",
            whole(faults.abs()),
            if faults > 0.0 { "more" } else { "fewer" },
            human_bytes((faults.abs() * 4096.0) as u64),
            if faults > 0.0 {
                "faulted in"
            } else {
                "not faulted in"
            }
        )
    } else {
        "no difference in page faults".to_string()
    };
    if !listed.is_empty() {
        s.push_str(&format!(", {}", listed.join(", ")));
    }
    if base.calls_uncounted || other.calls_uncounted {
        s.push_str(" (memory syscalls not counted)");
    }
    // How, where the extra faults go with a kind of call the run with them makes more
    // of: this run's (more faults) or the base's (fewer).
    if faults_named {
        let sign = faults.signum();
        let who = if faults > 0.0 {
            allocator
        } else {
            base_allocator
        };
        let more = |n: &str| calls.iter().any(|(c, d)| *c == n && d * sign > 0.0);
        let how = if more("brk") && who.starts_with("system") {
            Some("glibc gives the top of its heap back with brk (a trim) and grows it again")
        } else if more("madvise") {
            Some("freed pages are given back to the kernel with madvise and faulted in again")
        } else if more("munmap") {
            Some("buffers are mapped and unmapped again")
        } else {
            None
        };
        if let Some(how) = how {
            if faults > 0.0 {
                s.push_str(&format!(": {how}"));
            } else {
                s.push_str(&format!(": under {who}, {how}"));
            }
        }
    }
    Some(s)
}

/// A comparison in words that read in a sentence: "17.00x slower [16.80x, 17.13x]", or
/// where there is no verdict, the ratio as faster or slower and why there is none.
pub(crate) fn phrase(c: &Comparison) -> String {
    match c.verdict {
        Some(Verdict::Slower | Verdict::Faster | Verdict::NoSignificantDifference) => describe(c),
        _ => {
            let faster = c.ratio < 1.0;
            let (x, word) = if faster {
                (1.0 / c.ratio, "faster")
            } else {
                (c.ratio, "slower")
            };
            match c.interval {
                Some(ci) => {
                    let (lo, hi) = if faster {
                        (1.0 / ci.high, 1.0 / ci.low)
                    } else {
                        (ci.low, ci.high)
                    };
                    format!(
                        "{x:.2}x {word} (no verdict: [{lo:.2}x, {hi:.2}x] is only a {:.1} % interval)",
                        100.0 * ci.coverage
                    )
                }
                None => format!("{x:.2}x {word} (one process: no interval, no verdict)"),
            }
        }
    }
}

/// [`phrase`] with what it is against: "3.41x faster [2.35x, 3.73x] than `base`", "no
/// significant difference from `base` (0.98x [0.96x, 1.19x])".
pub(crate) fn phrase_than(c: &Comparison, base: &str) -> String {
    let p = phrase(c);
    match p.strip_prefix("no significant difference ") {
        Some(rest) => format!("no significant difference from {base} {rest}"),
        None => format!("{p} than {base}"),
    }
}

/// Whether two cells' counts differ enough to explain a difference: a page fault per
/// iteration and a tenth of the larger count, or a memory syscall's change worth naming
/// ([`crate::model::metric`]: half a call per iteration).
pub fn counts_differ(base: Counts, other: Counts) -> bool {
    let faults = (other.faults - base.faults).abs();
    let calls = [
        other.brk - base.brk,
        other.mmap - base.mmap,
        other.munmap - base.munmap,
        other.madvise - base.madvise,
    ];
    (MINOR_FAULTS.named(faults) && faults >= 0.1 * other.faults.max(base.faults))
        || calls.iter().any(|d| BRK.named(*d))
}

/// One comparison of the answer: `subject`'s `variant` against `against` (in-place, or
/// the fastest allocator of the variant), and — where the counts differ — the cause in
/// words.
#[derive(Clone, Debug)]
pub struct Finding {
    pub subject: String,
    pub variant: Variant,
    pub against: String,
    pub comparison: Comparison,
    pub cause: Option<String>,
    /// What removes the cost: measured in the same rounds, or a knob set to measure.
    pub removed_by: Vec<String>,
}

impl Finding {
    /// A verdict of faster or slower, its whole interval beyond the noise band.
    pub fn decided(&self) -> bool {
        matches!(
            self.comparison.verdict,
            Some(Verdict::Slower | Verdict::Faster)
        )
    }

    /// Whether it is an answer item: a verdict, or a difference in exact counts that
    /// explains it. A time ratio with neither is noise and never one.
    pub fn is_answer(&self) -> bool {
        self.decided()
            || matches!(
                self.comparison.verdict,
                Some(Verdict::NoSignificantDifference)
            )
            || self.cause.is_some()
    }

    /// The comparison in words: "17.02x slower [16.80x, 17.13x]", "no significant difference (1.01x
    /// [0.97x, 1.04x])".
    pub fn words(&self) -> String {
        let c = &self.comparison;
        match (c.verdict, c.interval) {
            (Some(Verdict::NoSignificantDifference), Some(ci)) => format!(
                "no significant difference ({:.2}x [{:.2}x, {:.2}x])",
                c.ratio, ci.low, ci.high
            ),
            _ => phrase(c),
        }
    }
}

/// An allocator's part of the answer: each of its variants against its in-place cell, and
/// for the costly ones what removes the cost (measured in the same rounds, or a knob set
/// to measure).
#[derive(Clone, Debug)]
pub struct AllocatorAnswer {
    pub subject: String,
    pub items: Vec<Finding>,
}

/// A variant's part of the answer: its fastest allocator and every other against it.
#[derive(Clone, Debug)]
pub struct VariantAnswer {
    pub variant: Variant,
    pub fastest: String,
    pub p50_ns: Option<u64>,
    pub rss_end_bytes: Option<u64>,
    pub others: Vec<Finding>,
}

/// The answer of a set of cells measured in paired rounds (one workload and size).
#[derive(Clone, Debug, Default)]
pub struct Answer {
    pub allocators: Vec<AllocatorAnswer>,
    pub variants: Vec<VariantAnswer>,
    /// Comparisons with neither a verdict nor a difference in counts: not answers.
    pub open: usize,
    /// The confidence level of its intervals and verdicts (its cells').
    pub level: f64,
    /// The price of speed: each allocator against glibc's where one is at least twice as
    /// fast or slow, with the memory it holds (`analysis::price`'s, set by the caller).
    pub price: Vec<crate::analysis::findings::Item>,
}

impl Answer {
    /// The answer as sentences for a page or a report, each allocator's costly
    /// differences first (a verdict and a cause), then the other verdicts, then per
    /// variant the fastest allocator.
    pub fn sentences(&self) -> Vec<String> {
        let mut costly = Vec::new();
        let mut other = Vec::new();
        for a in &self.allocators {
            for f in &a.items {
                let mut s = format!(
                    "{}: {} vs {}: {}",
                    a.subject,
                    f.variant,
                    f.against,
                    f.words()
                );
                if let Some(cause) = &f.cause {
                    s.push_str(&format!(" — {cause}"));
                }
                if !f.removed_by.is_empty() {
                    s.push_str(&format!("; removed by: {}", f.removed_by.join("; ")));
                }
                if f.decided() && f.cause.is_some() {
                    costly.push(s);
                } else if f.decided() {
                    other.push(s);
                }
            }
        }
        for v in &self.variants {
            let slower: Vec<String> = v
                .others
                .iter()
                .filter(|f| f.decided())
                .map(|f| format!("{} {}", f.subject, f.words()))
                .collect();
            if !slower.is_empty() {
                other.push(format!(
                    "fastest {}: {}; {}",
                    v.variant,
                    v.fastest,
                    slower.join(", ")
                ));
            }
        }
        costly.extend(other);
        costly
    }
}

/// A knob set that goes at the mechanism `counts` show for `spec`'s allocator, to measure
/// (the tunables experiment's sets): glibc's trim, jemalloc's and mimalloc's purges.
fn knob_to_measure(spec: &str, c: Counts) -> Option<&'static str> {
    let allocator = spec.split(':').next().unwrap_or(spec);
    if spec.contains(':') {
        return None;
    }
    match allocator {
        "system" if BRK.named(c.brk) => Some("system:top_pad=64M"),
        "system" if MUNMAP.named(c.munmap) => Some("system:mmap_threshold=64M"),
        "jemalloc" if MADVISE.named(c.madvise) => Some("jemalloc:dirty_decay_ms=-1"),
        "mimalloc" if MADVISE.named(c.madvise) => Some("mimalloc:purge_delay=-1"),
        _ => None,
    }
}

/// The answer of `cells` (index-aligned with `rows`): per allocator spec, each variant
/// against in-place; per variant, the allocators against the fastest.
pub fn of_cells(cells: &[&Cell], rows: &[SummaryRow], threshold: f64) -> Answer {
    let ok = |i: usize| rows[i].status.is_ok() && rows[i].p50_ns.is_some();
    let mut specs: Vec<&str> = Vec::new();
    for r in rows {
        if !specs.contains(&r.allocator_spec.as_str()) {
            specs.push(&r.allocator_spec);
        }
    }
    let find = |spec: &str, v: Variant| {
        (0..rows.len()).find(|&i| ok(i) && rows[i].allocator_spec == spec && rows[i].variant == v)
    };
    let mut answer = Answer {
        level: cells
            .first()
            .map_or(crate::analysis::stats::DEFAULT_LEVEL, |c| c.level),
        ..Answer::default()
    };
    let mut vs_fastest: Vec<(Variant, usize, Vec<usize>)> = Vec::new();
    for &v in Variant::ALL {
        let members: Vec<usize> = (0..rows.len())
            .filter(|&i| ok(i) && rows[i].variant == v)
            .collect();
        let Some(&fastest) = members.iter().min_by_key(|&&i| rows[i].p50_ns) else {
            continue;
        };
        if members.len() >= 2 {
            vs_fastest.push((
                v,
                fastest,
                members.into_iter().filter(|&i| i != fastest).collect(),
            ));
        }
    }
    for spec in &specs {
        let Some(base) = find(spec, Variant::InPlace) else {
            continue;
        };
        let mut items = Vec::new();
        for v in Variant::ALL.iter().filter(|v| **v != Variant::InPlace) {
            let Some(i) = find(spec, *v) else { continue };
            let Some(c) = cells::compare(cells[base], cells[i], threshold) else {
                continue;
            };
            let (b, o) = (Counts::of(&rows[base]), Counts::of(&rows[i]));
            let cause = counts_differ(b, o).then(|| mechanism(b, o, spec));
            let mut finding = Finding {
                subject: spec.to_string(),
                variant: *v,
                against: "in-place".into(),
                comparison: c,
                cause,
                removed_by: Vec::new(),
            };
            let mut removed_by = Vec::new();
            if !finding.is_answer() {
                answer.open += 1;
                continue;
            }
            // What removes a cost the counts explain: the fastest other allocator of
            // the variant without it, reusing one buffer, or a knob set to measure.
            if finding.comparison.verdict == Some(Verdict::Slower) && o.faults > b.faults {
                let cheaper = (0..rows.len())
                    .filter(|&j| ok(j) && j != i && rows[j].variant == *v)
                    .filter(|&j| Counts::of(&rows[j]).faults <= b.faults.max(o.faults * 0.1))
                    .filter_map(|j| {
                        let c = cells::compare(cells[i], cells[j], threshold)?;
                        (c.verdict == Some(Verdict::Faster)).then_some((j, c))
                    })
                    .min_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio));
                if let Some((j, c)) = cheaper {
                    removed_by.push(format!(
                        "{} ({v} {}, {} faults/it)",
                        rows[j].allocator_spec,
                        describe(&c),
                        fmt_count(Counts::of(&rows[j]).faults)
                    ));
                }
                if *v != Variant::Reuse {
                    if let Some(r) = find(spec, Variant::Reuse) {
                        if let Some(c) = cells::compare(cells[i], cells[r], threshold) {
                            if c.verdict == Some(Verdict::Faster) {
                                removed_by.push(format!(
                                    "reusing one output buffer (reuse: {} than {v})",
                                    describe(&c)
                                ));
                            }
                        }
                    }
                }
                if let Some(knob) = knob_to_measure(spec, o) {
                    if !specs.contains(&knob) {
                        removed_by.push(format!(
                            "a knob to measure: --allocators {spec},{knob} --variants {v}"
                        ));
                    }
                }
            }
            finding.removed_by = removed_by;
            items.push(finding);
        }
        answer.allocators.push(AllocatorAnswer {
            subject: spec.to_string(),
            items,
        });
    }
    for (v, fastest, others) in vs_fastest {
        let mut found = Vec::new();
        for i in others {
            let Some(c) = cells::compare(cells[fastest], cells[i], threshold) else {
                continue;
            };
            let (b, o) = (Counts::of(&rows[fastest]), Counts::of(&rows[i]));
            let f = Finding {
                subject: rows[i].allocator_spec.clone(),
                variant: v,
                against: rows[fastest].allocator_spec.clone(),
                comparison: c,
                removed_by: Vec::new(),
                // Only what the slower one does more of: "fewer" would describe the
                // fastest's mechanism under the other's name.
                cause: (counts_differ(b, o) && o.faults > b.faults - 1.0).then(|| {
                    mechanism_against(b, o, &rows[i].allocator_spec, &rows[fastest].allocator_spec)
                }),
            };
            if f.is_answer() {
                found.push(f);
            } else {
                answer.open += 1;
            }
        }
        answer.variants.push(VariantAnswer {
            variant: v,
            fastest: rows[fastest].allocator_spec.clone(),
            p50_ns: rows[fastest].p50_ns,
            rss_end_bytes: rows[fastest].rss_end_bytes,
            others: found,
        });
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Syscalls that were not counted are said to be so, never "no more".
    #[test]
    fn uncounted_calls_are_not_said_to_be_none() {
        let base = Counts {
            calls_uncounted: true,
            ..Counts::default()
        };
        let oop = Counts {
            faults: 3874.0,
            calls_uncounted: true,
            ..Counts::default()
        };
        let m = mechanism(base, oop, "system");
        assert!(
            m.contains("and memory syscalls not counted per iteration"),
            "{m}"
        );
        assert!(!m.contains("no more memory syscalls"), "{m}");
        let same = mechanism(base, base, "system");
        assert!(same.contains("(memory syscalls not counted)"), "{same}");
    }

    #[test]
    fn the_mechanism_names_the_trim() {
        let base = Counts::default();
        let oop = Counts {
            faults: 3874.0,
            brk: 3.0,
            ..Counts::default()
        };
        let m = mechanism(base, oop, "system");
        assert!(
            m.starts_with("3,874 more page faults (15.1 MiB faulted in again) and 3.00 brk"),
            "{m}"
        );
        assert!(m.contains("trim"), "{m}");
        assert!(mechanism(base, base, "system").starts_with("the same page faults"));
        // Calls alone (snmalloc's out-of-place: a madvise, no fault): no "0 more faults".
        let calls_only = Counts {
            madvise: 1.0,
            ..Counts::default()
        };
        assert_eq!(
            mechanism(base, calls_only, "snmalloc"),
            "1.00 madvise more per iteration, and no difference in page faults"
        );
        // Faster than in place: what in place did that this one does not.
        let jemalloc_in_place = Counts {
            faults: 1954.0,
            madvise: 1.0,
            ..Counts::default()
        };
        let m = mechanism(jemalloc_in_place, base, "jemalloc");
        assert!(
            m.starts_with("1,954 fewer page faults (7.6 MiB not faulted in again) and 1.00 madvise per iteration: in place, the freed pages are given back"),
            "{m}"
        );
    }

    /// Fewer faults that fault in as much memory are huge pages, not memory kept: said
    /// so (jemalloc's out-of-place case with its defaults and with thp:always, as
    /// measured).
    #[test]
    fn fewer_faults_in_huge_pages_are_not_memory_kept() {
        let m = (1u64 << 20) as f64;
        let defaults = Counts {
            faults: 3908.0,
            madvise: 2.0,
            faulted: Some((15.3 * m, 0.0)),
            ..Counts::default()
        };
        let always = Counts {
            faults: 8.0,
            madvise: 2.0,
            faulted: Some((16.0 * m, 8.0)),
            ..Counts::default()
        };
        let text = mechanism_against(defaults, always, "jemalloc", "with jemalloc's defaults");
        assert_eq!(
            text,
            "3,900 fewer page faults per iteration, but 16.0 MiB faulted in against 15.3 MiB: 8.00 of its faults map a huge page each, so as much memory is faulted in with fewer, larger faults; the freed pages are given back to the kernel with madvise and faulted in again"
        );
        assert!(!text.contains("not faulted in again"), "{text}");
        // The other way round: the base's faults are the huge ones.
        let back = mechanism_against(always, defaults, "jemalloc", "with thp:always");
        assert!(back.starts_with("3,900 more page faults per iteration, but 15.3 MiB faulted in against 16.0 MiB: 8.00 of the faults with thp:always map a huge page each"), "{back}");
        // Memory really kept: fewer faults and fewer bytes, said as before.
        let kept = Counts {
            faults: 0.0,
            faulted: Some((0.0, 0.0)),
            ..Counts::default()
        };
        assert!(mechanism_against(defaults, kept, "mimalloc", "x")
            .starts_with("3,908 fewer page faults (15.3 MiB not faulted in again)"));
    }
}
