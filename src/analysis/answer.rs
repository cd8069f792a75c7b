//! The lab's findings as data, computed once for every surface: a cell's counts as the
//! mechanism reads them, what moved between two cells and how the allocator made it
//! happen, a comparison in words, and the answer of a set of cells (per allocator, each
//! variant against in-place with its cause; per variant, the allocators against the
//! fastest, and what removes a cost) that the console, the pages and the reports render.

use crate::analysis::cells;
use crate::analysis::explain::describe;
use crate::analysis::stats::{Comparison, Verdict};
use crate::fmt::fmt_count;
use crate::model::metric::MINOR_FAULTS;
use crate::model::record::Cell;
use crate::model::spec::{Choice, Variant};
use crate::model::summary::SummaryRow;

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

/// One comparison of the answer: `subject`'s `variant` against `against` (in-place, or
/// the fastest allocator of the variant), and — where the counts differ — the cause in
/// words.
#[derive(Clone, Debug)]
pub struct Finding {
    pub subject: String,
    pub variant: Variant,
    pub against: String,
    pub comparison: Comparison,
    /// Why, where the counts or the recorded calls explain it.
    pub cause: Option<crate::analysis::mechanism::Why>,
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
                    s.push_str(&format!(" — {}", cause.text));
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

/// A knob set that goes at a mechanism the recorded calls of `spec`'s allocator show, to
/// measure (the tunables experiment's sets): glibc's trim and map per buffer, jemalloc's
/// and mimalloc's purges.
fn knob_to_measure(spec: &str, why: &crate::analysis::mechanism::Why) -> Option<&'static str> {
    let allocator = spec.split(':').next().unwrap_or(spec);
    if spec.contains(':') {
        return None;
    }
    let has = |key: &str| why.mechanisms.iter().any(|m| m.key == key);
    match allocator {
        "system" if has("trim") => Some("system:top_pad=64M"),
        "system" if has("map-per-buffer") => Some("system:mmap_threshold=64M"),
        "jemalloc" if has("purge") => Some("jemalloc:dirty_decay_ms=-1"),
        "mimalloc" if has("purge") => Some("mimalloc:purge_delay=-1"),
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
            let cause = cells::why(
                (cells[i], &v.to_string()),
                (cells[base], "in-place"),
                c.ratio,
            );
            let cause = cause.explains().then_some(cause);
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
            let faults = |r: &SummaryRow| r.per_iter[MINOR_FAULTS].unwrap_or(0.0);
            let (b_faults, o_faults) = (faults(&rows[base]), faults(&rows[i]));
            if finding.comparison.verdict == Some(Verdict::Slower) && o_faults > b_faults {
                let cheaper = (0..rows.len())
                    .filter(|&j| ok(j) && j != i && rows[j].variant == *v)
                    .filter(|&j| faults(&rows[j]) <= b_faults.max(o_faults * 0.1))
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
                        fmt_count(faults(&rows[j]))
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
                if let Some(knob) = finding
                    .cause
                    .as_ref()
                    .and_then(|w| knob_to_measure(spec, w))
                {
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
            let cause = cells::why(
                (cells[i], &rows[i].allocator_spec),
                (cells[fastest], &rows[fastest].allocator_spec),
                c.ratio,
            );
            let f = Finding {
                subject: rows[i].allocator_spec.clone(),
                variant: v,
                against: rows[fastest].allocator_spec.clone(),
                comparison: c,
                removed_by: Vec::new(),
                cause: cause.explains().then_some(cause),
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
