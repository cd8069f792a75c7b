//! The one composer of the comparisons of cells, for every surface: each variant against
//! its allocator's in-place, each allocator against the fastest of its variant, each knob
//! set against its allocator's defaults, at one workload, thread count and size. Each is
//! a [`Finding`]: the comparison with its interval and verdict, its cause from the
//! evidence ([`crate::analysis::mechanism`]), what removes the cost, and the figures it
//! rests on; [`Finding::item`] words it once. The console lays the parts out, REPORT.md,
//! report.html, findings.json and index.html print the items.

use crate::analysis::cells;
use crate::analysis::findings::{counts_of, DifferenceFigures, Figures, Item};
use crate::analysis::mechanism::Why;
use crate::analysis::stats::{Comparison, Verdict};
use crate::fmt::fmt_count;
use crate::model::metric::MINOR_FAULTS;
use crate::model::record::Cell;
use crate::model::spec::{Choice, Variant};
use crate::model::summary::SummaryRow;

/// A ratio in words with its interval and verdict: "8.10x slower [7.90x, 8.31x]", "no
/// significant difference (1.01x [0.99x, 1.03x])", or, without a verdict, the ratio as
/// faster or slower and why there is none. The one wording of a comparison.
pub fn phrase(c: &Comparison) -> String {
    let x = |v: f64| format!("{v:.2}x");
    let faster = c.ratio < 1.0;
    match (c.verdict, c.interval) {
        (Some(Verdict::Slower), Some(ci)) => {
            format!("{} slower [{}, {}]", x(c.ratio), x(ci.low), x(ci.high))
        }
        (Some(Verdict::Faster), Some(ci)) => format!(
            "{} faster [{}, {}]",
            x(1.0 / c.ratio),
            x(1.0 / ci.high),
            x(1.0 / ci.low)
        ),
        (Some(Verdict::NoSignificantDifference), Some(ci)) => format!(
            "no significant difference ({} [{}, {}])",
            x(c.ratio),
            x(ci.low),
            x(ci.high)
        ),
        (_, Some(ci)) => {
            let (v, lo, hi, word) = if faster {
                (1.0 / c.ratio, 1.0 / ci.high, 1.0 / ci.low, "faster")
            } else {
                (c.ratio, ci.low, ci.high, "slower")
            };
            format!(
                "{} {word} (no verdict: [{}, {}] is only a {:.1} % interval)",
                x(v),
                x(lo),
                x(hi),
                100.0 * ci.coverage
            )
        }
        (_, None) => {
            let (v, word) = if faster {
                (1.0 / c.ratio, "faster")
            } else {
                (c.ratio, "slower")
            };
            format!("{} {word} (one process: no interval, no verdict)", x(v))
        }
    }
}

/// [`phrase`] with what it is against: "3.41x faster [2.35x, 3.73x] than `base`", "no
/// significant difference from `base` (0.98x [0.96x, 1.19x])".
pub fn phrase_than(c: &Comparison, base: &str) -> String {
    match (c.verdict, c.interval) {
        (Some(Verdict::NoSignificantDifference), Some(ci)) => format!(
            "no significant difference from {base} ({:.2}x [{:.2}x, {:.2}x])",
            c.ratio, ci.low, ci.high
        ),
        _ => format!("{} than {base}", phrase(c)),
    }
}

pub use crate::analysis::findings::Against;

/// One comparison of cells: `subject`'s `variant` against `against`, its cause where the
/// counts or the recorded calls explain it, and what removes a cost.
#[derive(Clone, Debug)]
pub struct Finding {
    pub subject: String,
    pub variant: Variant,
    /// What it is against, in words: "in-place", "tcmalloc", "system's defaults".
    pub against: String,
    pub kind: Against,
    /// Where: "scale, 1,000,000 elements, 1 thread".
    pub context: String,
    pub comparison: Comparison,
    /// Why, where the counts or the recorded calls explain it.
    pub cause: Option<Why>,
    /// What removes the cost: measured in the same rounds, or a knob set to measure.
    pub removed_by: Vec<String>,
    /// Where either cell has fewer processes than planned (its item says so).
    pub short: Option<crate::analysis::findings::Shortfall>,
    /// The figures it rests on.
    pub figures: DifferenceFigures,
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

    /// The comparison in words: "17.02x slower [16.80x, 17.13x]".
    pub fn words(&self) -> String {
        phrase(&self.comparison)
    }

    /// What it compares, without where: "out-of-place vs in-place", "out-of-place vs
    /// tcmalloc (the fastest)", "out-of-place vs system's defaults".
    pub fn compared(&self) -> String {
        match self.kind {
            Against::Fastest => format!("{} vs {} (the fastest)", self.variant, self.against),
            _ => format!("{} vs {}", self.variant, self.against),
        }
    }

    /// How much it weighs as a headline: the size of its ratio (log) where decided; half
    /// that without a verdict (one process, or too few for the interval's level), only
    /// from [`UNTESTED_RATIO`] and only where the counts explain it; none where the
    /// processes find no difference.
    pub fn weight(&self) -> Option<f64> {
        let c = &self.comparison;
        let size = c.ratio.ln().abs();
        match c.verdict {
            Some(Verdict::Slower | Verdict::Faster) => Some(size),
            Some(Verdict::NoSignificantDifference) => None,
            _ if (c.ratio >= UNTESTED_RATIO || c.ratio <= 1.0 / UNTESTED_RATIO)
                && self.cause.is_some() =>
            {
                Some(size / 2.0)
            }
            _ => None,
        }
    }

    /// The finding as an item, worded once: "scale, 1,000,000 elements, 1 thread: system
    /// out-of-place vs in-place: 29.03x slower [28.01x, 30.70x]; why: …; removed by: …".
    pub fn item(&self) -> Item {
        let mut body = format!("{}: {}", self.compared(), self.words());
        if let Some(w) = &self.cause {
            body.push_str(&format!("; why: {}", w.text));
        }
        if !self.removed_by.is_empty() {
            body.push_str(&format!("; removed by: {}", self.removed_by.join("; ")));
        }
        Item::parted(
            self.context.clone(),
            self.subject.clone(),
            body,
            Figures::Difference(Box::new(self.figures.clone())),
        )
        .marked(self.short.clone())
    }
}

/// A difference without a verdict (one process per cell, or too few for the interval's
/// level) leads only from this ratio.
pub const UNTESTED_RATIO: f64 = 1.5;

/// An allocator's part of the answer: each of its variants against its in-place cell, and
/// for the costly ones what removes the cost (measured in the same rounds, or a knob set
/// to measure); a knob set's variants also against its allocator's defaults.
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

/// The answer of a set of cells measured in paired rounds (one workload, thread count and
/// size).
#[derive(Clone, Debug, Default)]
pub struct Answer {
    /// Where: "scale, 1,000,000 elements, 1 thread".
    pub context: String,
    pub allocators: Vec<AllocatorAnswer>,
    pub variants: Vec<VariantAnswer>,
    /// Comparisons with neither a verdict nor a difference in counts: not answers, listed
    /// among the findings only.
    pub open: Vec<Finding>,
    /// The confidence level of its intervals and verdicts (its cells').
    pub level: f64,
    /// The price of speed: each allocator against glibc's where one is at least twice as
    /// fast or slow, with the memory it holds (`analysis::price`'s, set by the caller).
    pub price: Vec<Item>,
}

impl Answer {
    /// Every finding: each allocator's, then each variant's against its fastest.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        self.allocators
            .iter()
            .flat_map(|a| &a.items)
            .chain(self.variants.iter().flat_map(|v| &v.others))
    }

    /// Every comparison as an item: the findings ([`Answer::items`]), then the open ones.
    pub fn all_items(&self) -> Vec<Item> {
        let mut items = self.items();
        items.extend(self.open.iter().map(Finding::item));
        items
    }

    /// The findings as items, each allocator's costly differences first (a verdict and a
    /// cause), then the other verdicts, then the rest.
    pub fn items(&self) -> Vec<Item> {
        let rank = |f: &Finding| match (f.decided(), f.cause.is_some()) {
            (true, true) => 0,
            (true, false) => 1,
            _ => 2,
        };
        let mut all: Vec<&Finding> = self.findings().collect();
        all.sort_by_key(|f| rank(f));
        all.into_iter().map(Finding::item).collect()
    }
}

/// A knob set that goes at a mechanism the recorded calls of `spec`'s allocator show, to
/// measure (the tunables experiment's sets): glibc's trim and map per buffer, jemalloc's
/// and mimalloc's purges.
fn knob_to_measure(spec: &str, why: &Why) -> Option<&'static str> {
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

/// "scale, 1,000,000 elements, 1 thread": where `cell` was measured.
pub fn context_of(cell: &Cell) -> String {
    format!(
        "{}, {}, {}",
        cell.spec.workload,
        cell.spec.workload.size_words(cell.spec.size),
        crate::fmt::Threads(cell.spec.threads)
    )
}

/// The figures of `other` against `base`, compared as `cmp`, with `cause`.
fn difference_figures(
    base: &Cell,
    other: &Cell,
    kind: Against,
    cmp: &Comparison,
    cause: Why,
) -> DifferenceFigures {
    DifferenceFigures {
        allocator: other.spec.allocator_label(),
        variant: other.spec.variant,
        against: kind,
        against_allocator: base.spec.allocator_label(),
        against_variant: base.spec.variant,
        workload: other.spec.workload,
        threads: other.spec.threads,
        size: other.spec.size,
        comparison: *cmp,
        words: phrase(cmp),
        p50_ns: cells::row(other).p50_ns,
        against_p50_ns: cells::row(base).p50_ns,
        processes: other.records().count(),
        against_processes: base.records().count(),
        counts: counts_of(&cells::row(other)),
        against_counts: counts_of(&cells::row(base)),
        cause,
        removed_by: Vec::new(),
    }
}

/// The answer of `cells` (one workload, thread count and size; index-aligned with
/// `rows`): per allocator spec, each variant against in-place, and a knob set's against
/// its allocator's defaults; per variant, the allocators against the fastest. `planned`:
/// the processes each cell was to have, where a finding on fewer says so.
pub fn of_cells(
    cells: &[&Cell],
    rows: &[SummaryRow],
    threshold: f64,
    planned: Option<usize>,
) -> Answer {
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
    let context = cells.first().map(|c| context_of(c)).unwrap_or_default();
    let finding = |i: usize, base: usize, kind: Against, against: String, names: (&str, &str)| {
        let c = cells::compare(cells[base], cells[i], threshold)?;
        let cause = cells::why((cells[i], names.0), (cells[base], names.1), &c);
        let figures = difference_figures(cells[base], cells[i], kind, &c, cause.clone());
        let short = crate::analysis::findings::Shortfall::of(
            &Figures::Difference(Box::new(figures.clone())).cells(),
            cells,
            planned,
        );
        Some(Finding {
            subject: rows[i].allocator_spec.clone(),
            variant: rows[i].variant,
            against,
            kind,
            context: context.clone(),
            figures,
            comparison: c,
            cause: cause.explains().then_some(cause),
            removed_by: Vec::new(),
            short,
        })
    };
    let mut answer = Answer {
        context: context.clone(),
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
        let mut items = Vec::new();
        if let Some(base) = find(spec, Variant::InPlace) {
            for v in Variant::ALL.iter().filter(|v| **v != Variant::InPlace) {
                let Some(i) = find(spec, *v) else { continue };
                let name = v.to_string();
                let Some(mut f) = finding(
                    i,
                    base,
                    Against::InPlace,
                    "in-place".into(),
                    (&name, "in-place"),
                ) else {
                    continue;
                };
                if !f.is_answer() {
                    answer.open.push(f);
                    continue;
                }
                f.removed_by = removed_by(&f, spec, *v, (i, base), cells, rows, threshold, &specs);
                f.figures.removed_by = f.removed_by.clone();
                items.push(f);
            }
        }
        // A knob set against its allocator's defaults (the same THP mode), variant by
        // variant.
        let cell_of = |spec: &str| {
            (0..rows.len())
                .find(|&i| rows[i].allocator_spec == spec)
                .map(|i| cells[i])
        };
        if let Some(c) = cell_of(spec).filter(|c| !c.spec.knobs.is_empty()) {
            let defaults = crate::model::run::RunSpec {
                knobs: Vec::new(),
                library: None,
                ..c.spec.clone()
            }
            .allocator_label();
            for v in Variant::ALL {
                let (Some(i), Some(base)) = (find(spec, *v), find(&defaults, *v)) else {
                    continue;
                };
                let against = format!("{defaults}'s defaults");
                match finding(
                    i,
                    base,
                    Against::Defaults,
                    against.clone(),
                    (spec, &against),
                ) {
                    Some(f) if f.is_answer() => items.push(f),
                    Some(f) => answer.open.push(f),
                    None => {}
                }
            }
        }
        answer.allocators.push(AllocatorAnswer {
            subject: spec.to_string(),
            items,
        });
    }
    for (v, fastest, others) in vs_fastest {
        let mut found = Vec::new();
        for i in others {
            let names = (
                rows[i].allocator_spec.as_str(),
                rows[fastest].allocator_spec.as_str(),
            );
            match finding(
                i,
                fastest,
                Against::Fastest,
                rows[fastest].allocator_spec.clone(),
                names,
            ) {
                Some(f) if f.is_answer() => found.push(f),
                Some(f) => answer.open.push(f),
                None => {}
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

/// What removes a cost the counts explain (`f`: variant `v` of `spec`, cells `i` against
/// its in-place `base`): the fastest other allocator of the variant without it, reusing
/// one buffer, or a knob set to measure.
#[allow(clippy::too_many_arguments)]
fn removed_by(
    f: &Finding,
    spec: &str,
    v: Variant,
    (i, base): (usize, usize),
    cells: &[&Cell],
    rows: &[SummaryRow],
    threshold: f64,
    specs: &[&str],
) -> Vec<String> {
    let ok = |j: usize| rows[j].status.is_ok() && rows[j].p50_ns.is_some();
    let faults = |r: &SummaryRow| r.per_iter[MINOR_FAULTS].unwrap_or(0.0);
    let (b_faults, o_faults) = (faults(&rows[base]), faults(&rows[i]));
    let mut out = Vec::new();
    if f.comparison.verdict != Some(Verdict::Slower) || o_faults <= b_faults {
        return out;
    }
    let cheaper = (0..rows.len())
        .filter(|&j| ok(j) && j != i && rows[j].variant == v)
        .filter(|&j| faults(&rows[j]) <= b_faults.max(o_faults * 0.1))
        .filter_map(|j| {
            let c = cells::compare(cells[i], cells[j], threshold)?;
            (c.verdict == Some(Verdict::Faster)).then_some((j, c))
        })
        .min_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio));
    if let Some((j, c)) = cheaper {
        out.push(format!(
            "{} ({v} {}, {} faults/it)",
            rows[j].allocator_spec,
            phrase(&c),
            fmt_count(faults(&rows[j]))
        ));
    }
    if v != Variant::Reuse {
        let reuse = (0..rows.len()).find(|&r| {
            ok(r) && rows[r].allocator_spec == spec && rows[r].variant == Variant::Reuse
        });
        if let Some(c) = reuse.and_then(|r| cells::compare(cells[i], cells[r], threshold)) {
            if c.verdict == Some(Verdict::Faster) {
                out.push(format!(
                    "reusing one output buffer (reuse: {} than {v})",
                    phrase(&c)
                ));
            }
        }
    }
    if let Some(knob) = f.cause.as_ref().and_then(|w| knob_to_measure(spec, w)) {
        if !specs.contains(&knob) {
            out.push(format!(
                "a knob to measure: --allocators {spec},{knob} --variants {v}"
            ));
        }
    }
    out
}

/// The answers of every group of `cells` (one per workload, thread count and size, in
/// that order), each from [`of_cells`]; `sizes`: only those sizes of each workload and
/// thread count, where given.
pub fn of_groups(
    cells: &[Cell],
    threshold: f64,
    planned: Option<usize>,
    sizes: &dyn Fn(crate::model::spec::Workload, u32) -> Vec<u64>,
) -> Vec<Answer> {
    let mut groups: Vec<(crate::model::spec::Workload, u32, u64)> = Vec::new();
    let mut keys: Vec<(crate::model::spec::Workload, u32)> = cells
        .iter()
        .map(|c| (c.spec.workload, c.spec.threads))
        .collect();
    keys.sort();
    keys.dedup();
    for (w, t) in keys {
        for n in sizes(w, t) {
            groups.push((w, t, n));
        }
    }
    groups
        .into_iter()
        .filter_map(|(w, t, n)| {
            let at: Vec<&Cell> = cells
                .iter()
                .filter(|c| {
                    c.spec.workload == w
                        && c.spec.threads == t
                        && c.spec.size == n
                        && c.records().next().is_some()
                })
                .collect();
            (!at.is_empty()).then(|| {
                let rows: Vec<SummaryRow> = at.iter().map(|c| cells::row(c)).collect();
                of_cells(&at, &rows, threshold, planned)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::cells::test_cell as cell_of;

    fn answer(cells: &[&Cell]) -> Answer {
        let rows: Vec<SummaryRow> = cells.iter().map(|c| cells::row(c)).collect();
        of_cells(cells, &rows, crate::model::metric::NOISE_THRESHOLD, None)
    }

    /// One process each: a ratio of 2x weighs as a headline only where the exact
    /// counts differ; the same ratio with the same counts is noise, never an answer.
    #[test]
    fn a_ratio_without_a_verdict_is_an_answer_only_where_the_counts_differ() {
        let mut base = cell_of("system", &[(1000, 0.0)]);
        base.spec.variant = Variant::InPlace;
        let same_counts = cell_of("system", &[(2000, 0.0)]);
        let more_faults = cell_of("system", &[(2000, 3874.0)]);
        let a = answer(&[&base, &more_faults]);
        let f = &a.allocators[0].items[0];
        assert!(f.comparison.interval.is_none());
        assert!(f.weight().is_some_and(|w| w > 0.0));
        assert!(
            f.item().text.contains("3,874 more page faults"),
            "{}",
            f.item().text
        );
        let a = answer(&[&base, &same_counts]);
        assert!(a.allocators[0].items.is_empty());
        assert_eq!(a.open.len(), 1);
    }

    /// A knob set is compared with its allocator's defaults: the faster one with its
    /// ratio and the faults it removes; one that changes nothing is no headline.
    #[test]
    fn a_knob_set_is_compared_with_its_allocators_defaults() {
        let defaults = cell_of(
            "system",
            &[
                (1700, 3874.0),
                (1710, 3874.0),
                (1690, 3874.0),
                (1705, 3874.0),
                (1698, 3874.0),
                (1702, 3874.0),
            ],
        );
        let padded = cell_of(
            "system:top_pad=64M",
            &[
                (100, 0.0),
                (101, 0.0),
                (99, 0.0),
                (100, 0.0),
                (102, 0.0),
                (100, 0.0),
            ],
        );
        let same = cell_of(
            "system:arena_max=1",
            &[
                (1701, 3874.0),
                (1690, 3874.0),
                (1712, 3874.0),
                (1699, 3874.0),
                (1703, 3874.0),
                (1695, 3874.0),
            ],
        );
        let a = answer(&[&defaults, &padded, &same]);
        // The one that changes nothing is said as no significant difference, and weighs
        // nothing as a headline.
        let found: Vec<&Finding> = a
            .findings()
            .filter(|f| f.kind == Against::Defaults && f.weight().is_some())
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{:?}",
            found.iter().map(|f| f.item().text).collect::<Vec<_>>()
        );
        let line = found[0].item().text;
        assert!(
            line.contains(": system:top_pad=64M out-of-place vs system's defaults: 17.01x faster"),
            "{line}"
        );
        assert!(line.contains("; why: 3,874 fewer page faults"), "{line}");
    }
}
