//! A results folder's answer: its three to five headline findings, computed once from the
//! folder's cells and cliffs and rendered by REPORT.md (its "Answer"), report.html (the
//! page's first list) and `alloclab run`'s last lines alike — none of them composes its
//! own.
//!
//! What leads: each exact cliff (one per allocator and pair of sizes, its variants and
//! counts together), confirmed ones first, with the threshold behind it and where it went
//! when that threshold was moved; then the largest differences against the same
//! allocator's in-place cell at the sizes of interest (one size per allocator and
//! variant), each with its interval (or why there is none) and the mechanism its counts
//! show. Everything else stays in the findings below it.

use crate::analysis::cliff::FoundCliff;
use crate::analysis::findings::{CliffChange, CliffFigures, Figures, FolderFindings, Item};
use crate::analysis::thresholds::{self, Cause};
use crate::export::plots::sizes_of_interest;
use crate::export::results::Loaded;
use crate::fmt::{fmt_count, group_thousands, human_bytes};
use crate::model::spec::Variant;
use std::collections::BTreeSet;

/// At most this many headlines.
pub const MOST: usize = 5;
/// Cliffs take at most this many of them, so that a difference can still lead.
const MOST_CLIFFS: usize = 4;

/// The exact cliffs of one allocator at one pair of sizes.
pub struct CliffGroup<'a> {
    pub label: String,
    pub workload: crate::model::spec::Workload,
    pub threads: u32,
    pub below: u64,
    pub above: u64,
    /// Each variant's change there: "out-of-place: minor faults 0 → 1.00".
    pub changes: Vec<String>,
    pub cliffs: Vec<&'a FoundCliff>,
}

/// The bisected cliffs grouped by allocator and sizes, in their order.
pub fn cliff_groups(cliffs: &[FoundCliff]) -> Vec<CliffGroup<'_>> {
    let mut groups: Vec<CliffGroup> = Vec::new();
    // A bisected pair with no step between them (cliffs.json of versions that did not
    // refuse them: 233 and 242 faults) is no headline.
    let step = |c: &&FoundCliff| {
        (c.above_value - c.below_value).abs() >= 0.5 * c.above_value.abs().max(c.below_value.abs())
    };
    for c in cliffs
        .iter()
        .filter(|c| c.unresolved.is_none())
        .filter(step)
    {
        let change = format!(
            "{}: {} {} → {}",
            c.variant,
            c.metric,
            fmt_count(c.below_value),
            fmt_count(c.above_value)
        );
        match groups
            .iter_mut()
            .find(|g| g.label == c.allocator && g.below == c.below_size && g.above == c.above_size)
        {
            Some(g) => {
                g.changes.push(change);
                g.cliffs.push(c);
            }
            None => groups.push(CliffGroup {
                label: c.allocator.clone(),
                workload: c.workload,
                threads: c.threads,
                below: c.below_size,
                above: c.above_size,
                changes: vec![change],
                cliffs: vec![c],
            }),
        }
    }
    groups
}

/// One cliff group as a headline, and its rank (lower leads).
fn cliff_headline(g: &CliffGroup, confirming: bool) -> (u8, Item) {
    let lives: Vec<Option<u64>> = g
        .cliffs
        .iter()
        .map(|c| c.workload.live_buffers(c.variant))
        .collect();
    let onset = g.cliffs.iter().any(|c| c.onset());
    let cause = thresholds::cause_of(&g.label, &lives, onset, g.below, g.above);
    let confirmation = g
        .cliffs
        .iter()
        .filter_map(|c| c.confirmation.as_ref())
        .find(|c| cause.proved_by(&c.threshold));
    let rank = match (&cause, confirmation) {
        (Cause::At { .. }, Some(c)) if c.verdict == "confirmed" => 0,
        (Cause::At { .. }, _) => 1,
        (Cause::Near { .. }, _) => 2,
        (Cause::Unexplained { .. }, _) => 3,
    };
    let moved = confirmation
        .map(|c| match (c.below, c.above) {
            (Some(b), Some(a)) => format!(
                "; moved with it to {}–{} under {} (rule: {}): {}",
                group_thousands(b as i64),
                group_thousands(a as i64),
                c.spec,
                c.predicted_text(),
                c.verdict
            ),
            _ => format!("; moving it ({}): {}", c.spec, c.verdict),
        })
        .unwrap_or_else(|| {
            if confirming && cause.movable().is_some() {
                "; moving it: not measured (INCOMPLETE: the run stopped before this confirmation)"
                    .into()
            } else {
                String::new()
            }
        });
    // The workload and threads where they are not the founding case's.
    let of = if g.workload == crate::model::spec::Workload::Scale && g.threads == 1 {
        String::new()
    } else {
        format!(" ({}, {})", g.workload, crate::fmt::Threads(g.threads))
    };
    // What the recorded calls show changes there, variant by variant.
    let what: Vec<(String, crate::analysis::mechanism::Why)> = g
        .cliffs
        .iter()
        .filter_map(|c| Some((c.variant.to_string(), c.why()?)))
        .collect();
    let changes_why: String = what
        .iter()
        .map(|(v, w)| format!("; what changes ({v}): {}", w.text))
        .collect();
    let text = format!(
        "{}{of} changes between {} and {} elements ({} per f64 buffer): {}{}{moved}{changes_why}",
        g.label,
        group_thousands(g.below as i64),
        group_thousands(g.above as i64),
        human_bytes(g.above * 8),
        g.changes.join("; "),
        cause.short()
    );
    let (at, threshold) = match &cause {
        Cause::At { threshold, .. } => ("at", Some(threshold.name.clone())),
        Cause::Near { threshold, .. } => ("near", Some(threshold.name.clone())),
        Cause::Unexplained { .. } => ("none", None),
    };
    let figures = Figures::Cliff(CliffFigures {
        allocator: g.label.clone(),
        workload: g.workload,
        threads: g.threads,
        below_size: g.below,
        above_size: g.above,
        bisected: true,
        changes: g
            .cliffs
            .iter()
            .map(|c| CliffChange {
                variant: c.variant,
                metric: c.metric.clone(),
                below_value: c.below_value,
                above_value: c.above_value,
            })
            .collect(),
        cause: at,
        threshold,
        behind: cause.sentence(),
        confirmation: confirmation.cloned(),
        moved: confirmation.map(|c| c.describe()),
        confirmed: confirmation.map(|c| c.verdict.starts_with("confirmed")),
        what_changes: what.into_iter().map(|(_, w)| w).collect(),
    });
    (
        rank,
        Item {
            text,
            parts: None,
            figures: Some(figures),
            incomplete: None,
        },
    )
}

/// The answers of the folder's cells at the sizes of interest of each workload and thread
/// count ([`crate::analysis::answer::of_groups`]).
/// Where each of the folder's cells put its output buffer, one item a cell, each marked
/// by its processes against the plan's: findings.json's and REPORT.md's alike.
pub fn alignment(loaded: &Loaded) -> Vec<Item> {
    let cells: Vec<_> = loaded.cells.iter().collect();
    crate::analysis::layout::alignment(&cells, crate::model::metric::NOISE_THRESHOLD)
        .into_iter()
        .map(|i| i.rests_on(&cells, Some(planned_processes(loaded))))
        .collect()
}

/// The processes each of the folder's cells was to have.
fn planned_processes(loaded: &Loaded) -> usize {
    loaded.plan.experiment.processes.max(1) as usize
}

pub fn answers(loaded: &Loaded) -> Vec<crate::analysis::answer::Answer> {
    let planned = planned_processes(loaded);
    let sizes = |w, t| {
        let all: BTreeSet<u64> = loaded
            .cells
            .iter()
            .filter(|c| c.spec.workload == w && c.spec.threads == t)
            .map(|c| c.spec.size)
            .collect();
        sizes_of_interest(&all)
    };
    crate::analysis::answer::of_groups(
        &loaded.cells,
        crate::model::metric::NOISE_THRESHOLD,
        Some(planned),
        &sizes,
    )
}

/// The differences that may lead, largest first: each variant against its allocator's
/// in-place and each knob set against its allocator's defaults, at the sizes of
/// interest, one size per allocator (without its THP mode) and variant.
fn differences(answers: &[crate::analysis::answer::Answer]) -> Vec<Item> {
    use crate::analysis::answer::Against;
    let mut out: Vec<(f64, DiffKey, Item)> = answers
        .iter()
        .flat_map(|a| a.allocators.iter().flat_map(|x| &x.items))
        .filter_map(|f| {
            let weight = f.weight()?;
            let key = match f.kind {
                Against::Defaults => format!("{} against its defaults", spec_only(&f.subject)),
                _ => spec_only(&f.subject),
            };
            Some((
                weight,
                (key, f.variant, f.figures.workload, f.figures.threads),
                f.item(),
            ))
        })
        .collect();
    // The largest first, and one size per allocator × variant (the same difference at
    // the next size says nothing new; the findings have every size).
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut seen = Vec::new();
    out.into_iter()
        .filter(|d| {
            let fresh = !seen.contains(&d.1);
            seen.push(d.1.clone());
            fresh
        })
        .map(|d| d.2)
        .collect()
}

/// A label without its THP mode: the same difference with THP off says nothing new in an
/// answer of five lines (the findings have it).
fn spec_only(label: &str) -> String {
    label.split(' ').next().unwrap_or(label).to_string()
}

/// What a difference is of: (allocator label, or a label and what it is against; variant;
/// workload; threads).
type DiffKey = (String, Variant, crate::model::spec::Workload, u32);

/// The cliffs' headlines, leading first: confirmed at a threshold, at one, near one,
/// at none (a stable order within each). `confirming`: the plan confirms thresholds but
/// did not finish, so a cliff without its confirmation says it was not measured.
fn cliff_lines(cliffs: &[FoundCliff], confirming: bool) -> Vec<Item> {
    let mut lines: Vec<(u8, Item)> = cliff_groups(cliffs)
        .iter()
        .map(|g| cliff_headline(g, confirming))
        .collect();
    lines.sort_by_key(|c| c.0);
    lines.into_iter().map(|c| c.1).collect()
}

/// A folder's answer: its headlines, and how many findings of the same kinds (cliffs and
/// differences) were left out of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// At most [`MOST`] headline findings, leading first.
    pub items: Vec<Item>,
    /// Cliffs and differences that did not make the headlines.
    pub more: usize,
    /// Where the folder's plan did not finish: what has no result, said before the
    /// headlines wherever they are shown (each headline that rests on it says so too).
    pub incomplete: Option<String>,
    /// The price of speed ([`crate::analysis::price`]): after the headlines, one item
    /// per allocator against glibc's where one is much faster or slower.
    pub price: Vec<Item>,
}

impl Answer {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.price.is_empty()
    }

    /// The headlines' sentences, leading first, then the price of speed.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.items
            .iter()
            .chain(&self.price)
            .map(|i| i.text.as_str())
    }

    /// The answer as the console shows it in `width` columns: each headline wrapped
    /// under two spaces, then the count of the rest.
    pub fn console(&self, width: usize) -> String {
        let mut s = String::new();
        for a in self.items.iter().map(|i| i.text.as_str()) {
            s.push_str(&crate::fmt::wrap(a, width, "  ", "    "));
        }
        for line in super::answer::price_console(&self.price, width.saturating_sub(2)).lines() {
            s.push_str("  ");
            s.push_str(line);
            s.push('\n');
        }
        if let Some(more) = self.more_line() {
            s.push_str(&crate::fmt::wrap(&more, width, "  ", "    "));
        }
        s
    }

    /// Where some are left out, a sentence that says how many (not a finding itself, so
    /// no renderer lists it among the headlines).
    pub fn more_line(&self) -> Option<String> {
        match self.more {
            0 => None,
            1 => Some("… and 1 more cliff or difference in the findings".into()),
            n => Some(format!(
                "… and {} more cliffs and differences in the findings",
                group_thousands(n as i64)
            )),
        }
    }
}

/// The heading of the items beside time ([`Answer::price`]): a service's tails where
/// they are among them, else the price of speed.
pub fn beside_heading(items: &[Item]) -> &'static str {
    if items.iter().any(|i| {
        matches!(
            &i.figures,
            Some(crate::analysis::findings::Figures::ServiceTail(_))
        )
    }) {
        "Tail latency and memory per live byte"
    } else {
        "The price of speed"
    }
}

/// The folder's headline findings, leading first: at most [`MOST`], and how many more
/// there are.
pub fn headlines(loaded: &Loaded) -> Answer {
    let differences = differences(&answers(loaded));
    let complete = loaded.complete();
    let confirming = !complete && loaded.plan.experiment.confirm_cliffs;
    // The bisected cliffs lead; a change not bisected (a quick run's) follows them where
    // it lies at a known threshold.
    let mut cliffs = cliff_lines(&loaded.cliffs, confirming);
    cliffs.extend(change_lines(loaded));
    let mut answer = answer_of(cliffs, differences);
    let cells: Vec<_> = loaded.cells.iter().collect();
    answer.price = crate::analysis::price::beside_time(
        &cells,
        crate::model::metric::NOISE_THRESHOLD,
        Some(planned_processes(loaded)),
    );
    answer.incomplete = (!complete).then(|| {
        format!(
            "INCOMPLETE: the run did not finish; missing: {}",
            loaded.missing().join("; ")
        )
    });
    answer
}

/// The folder's findings.json: `answer` (its [`headlines`]), every cliff, and every
/// comparison of the findings, as items with their figures.
pub fn findings(loaded: &Loaded, answer: &Answer) -> FolderFindings {
    let e = &loaded.plan.experiment;
    let threshold = crate::model::metric::NOISE_THRESHOLD;
    let comparisons = answers(loaded).iter().flat_map(|a| a.all_items()).collect();
    let confirming = !loaded.complete() && e.confirm_cliffs;
    FolderFindings {
        schema: crate::analysis::findings::SCHEMA,
        experiment: e.name.clone(),
        complete: loaded.complete(),
        incomplete: answer.incomplete.clone(),
        quick: e.quick,
        noise_threshold: threshold,
        confidence: loaded.plan.level(),
        answer: answer.items.clone(),
        price_of_speed: answer.price.clone(),
        more: answer.more,
        cliffs: cliff_lines(&loaded.cliffs, confirming),
        changes: changes(loaded),
        alignment: alignment(loaded),
        comparisons,
    }
}

/// A change of faults or memory syscalls per iteration between neighbouring sizes, in
/// words.
pub fn describe_jump(j: &crate::analysis::jumps::Jump, what: &str) -> String {
    let verb = if j.to_value > j.from_value {
        "jump"
    } else {
        "drop"
    };
    format!(
        "{} {} ({}, {}): {what} per iteration {verb} from {} at {} elements ({} per f64 buffer) to {} at {} elements ({})",
        j.allocator,
        j.variant,
        j.workload,
        crate::fmt::Threads(j.threads),
        fmt_count(j.from_value),
        fmt_count(j.from_size as f64),
        human_bytes(j.from_size * 8),
        fmt_count(j.to_value),
        fmt_count(j.to_size as f64),
        human_bytes(j.to_size * 8),
    )
}

/// Whether the bisected cliff `c` came from jump `j` of the sweep (of `what`).
pub fn covers(j: &crate::analysis::jumps::Jump, what: &str, c: &FoundCliff) -> bool {
    c.allocator == j.allocator
        && c.variant == j.variant
        && c.workload == j.workload
        && c.threads == j.threads
        && c.metric == what
        && j.from_size <= c.below_size
        && c.above_size <= j.to_size
}

/// The sweep's changes between neighbouring sizes of the plan that no cliff was bisected
/// from, each as an item.
pub fn changes(loaded: &Loaded) -> Vec<Item> {
    let rows: Vec<_> = loaded
        .cells
        .iter()
        .map(crate::analysis::cells::row)
        .collect();
    let (faults, syscalls) = loaded.jumps(&rows);
    faults
        .iter()
        .map(|j| (j, "minor faults"))
        .chain(syscalls.iter().map(|j| (j, "memory syscalls")))
        .filter(|(j, what)| !loaded.cliffs.iter().any(|c| covers(j, what, c)))
        .map(|(j, what)| Item::text(describe_change(j, what)))
        .collect()
}

/// Whether the change `j` (of `what`) starts where there was none (an onset).
fn onset_of(j: &crate::analysis::jumps::Jump, what: &str) -> bool {
    thresholds::is_onset(
        crate::analysis::cliff::Metric::of_name(what).threshold(),
        j.from_value,
        j.to_value,
    )
}

/// A change of the sweep between neighbouring sizes in words, with the threshold of its
/// allocator behind it (or that none is known there): findings.json's and REPORT.md's.
pub fn describe_change(j: &crate::analysis::jumps::Jump, what: &str) -> String {
    let cause = thresholds::cause_of(
        &j.allocator,
        &[j.workload.live_buffers(j.variant)],
        onset_of(j, what),
        j.from_size,
        j.to_size,
    );
    format!("{}{}", describe_jump(j, what), cause.short())
}

/// The sweep's changes that no cliff was bisected from (a quick run bisects none) and
/// that lie at a known threshold of their allocator, as headlines: one per allocator and
/// pair of neighbouring sizes, its variants and counts together, said to be between the
/// sweep's sizes (not bisected).
fn change_lines(loaded: &Loaded) -> Vec<Item> {
    let rows: Vec<_> = loaded
        .cells
        .iter()
        .map(crate::analysis::cells::row)
        .collect();
    let (faults, syscalls) = loaded.jumps(&rows);
    type Key = (String, crate::model::spec::Workload, u32, u64, u64);
    let mut groups: Vec<(Key, Vec<(&crate::analysis::jumps::Jump, &str)>)> = Vec::new();
    for (j, what) in faults
        .iter()
        .map(|j| (j, "minor faults"))
        .chain(syscalls.iter().map(|j| (j, "memory syscalls")))
        .filter(|(j, what)| !loaded.cliffs.iter().any(|c| covers(j, what, c)))
    {
        let key = (
            j.allocator.clone(),
            j.workload,
            j.threads,
            j.from_size,
            j.to_size,
        );
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push((j, what)),
            None => groups.push((key, vec![(j, what)])),
        }
    }
    groups
        .into_iter()
        .filter_map(|((allocator, workload, threads, from, to), jumps)| {
            let lives: Vec<Option<u64>> = jumps
                .iter()
                .map(|(j, _)| j.workload.live_buffers(j.variant))
                .collect();
            let onset = jumps.iter().any(|(j, what)| onset_of(j, what));
            let cause = thresholds::cause_of(&allocator, &lives, onset, from, to);
            let Cause::At { threshold, .. } = &cause else {
                return None;
            };
            let of = if workload == crate::model::spec::Workload::Scale && threads == 1 {
                String::new()
            } else {
                format!(" ({workload}, {})", crate::fmt::Threads(threads))
            };
            let changes: Vec<String> = jumps
                .iter()
                .map(|(j, what)| {
                    format!(
                        "{}: {what} {} → {}",
                        j.variant,
                        fmt_count(j.from_value),
                        fmt_count(j.to_value)
                    )
                })
                .collect();
            let figures = Figures::Cliff(CliffFigures {
                allocator: allocator.clone(),
                workload,
                threads,
                below_size: from,
                above_size: to,
                bisected: false,
                changes: jumps
                    .iter()
                    .map(|(j, what)| CliffChange {
                        variant: j.variant,
                        metric: what.to_string(),
                        below_value: j.from_value,
                        above_value: j.to_value,
                    })
                    .collect(),
                cause: "at",
                threshold: Some(threshold.name.clone()),
                behind: cause.sentence(),
                confirmation: None,
                moved: None,
                confirmed: None,
                what_changes: Vec::new(),
            });
            Some(Item {
                text: format!(
                    "{allocator}{of} changes between the sweep's sizes {} and {} elements ({} per f64 buffer; not bisected): {}{}",
                    group_thousands(from as i64),
                    group_thousands(to as i64),
                    human_bytes(to * 8),
                    changes.join("; "),
                    cause.short()
                ),
                parts: None,
                figures: Some(figures),
                incomplete: None,
            })
        })
        .collect()
}

/// The headlines out of the cliffs' and the differences' lines (each leading first): the
/// cliffs up to [`MOST_CLIFFS`], then differences up to [`MOST`]; the rest are counted.
fn answer_of(cliffs: Vec<Item>, differences: Vec<Item>) -> Answer {
    let all = cliffs.len() + differences.len();
    let mut items: Vec<Item> = cliffs.into_iter().take(MOST_CLIFFS).collect();
    let room = MOST - items.len();
    items.extend(differences.into_iter().take(room));
    let more = all - items.len();
    Answer {
        items,
        more,
        incomplete: None,
        price: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_are_described_as_jumps_and_drops() {
        use crate::analysis::jumps::fault_jumps;
        use crate::analysis::jumps::tests::row;
        let j = fault_jumps(&[row(4000, 0.02), row(8000, 35.0)]);
        let text = describe_jump(&j[0], "minor faults");
        assert!(text.contains("jump from 0.02 at 4,000 elements"), "{text}");
        let drops = fault_jumps(&[row(1, 500.0), row(2, 3.0)]);
        assert!(describe_jump(&drops[0], "minor faults").contains("drop"));
    }

    fn cliff(json: &str) -> FoundCliff {
        serde_json::from_str(json).unwrap()
    }

    /// At most five headlines, cliffs first but at most four of them, so that a
    /// difference still leads; what did not make them is counted in a sentence of its
    /// own (no sixth headline), in the singular or plural, only where something was left
    /// out.
    #[test]
    fn the_count_of_what_was_left_out_is_a_sentence_not_a_headline() {
        let named = |prefix: &str, n: usize| -> Vec<Item> {
            (0..n).map(|i| Item::text(format!("{prefix}{i}"))).collect()
        };
        let a = answer_of(named("cliff ", 6), named("difference ", 3));
        assert_eq!(
            a.lines().collect::<Vec<_>>(),
            ["cliff 0", "cliff 1", "cliff 2", "cliff 3", "difference 0"]
        );
        assert_eq!(
            a.more_line().as_deref(),
            Some("… and 4 more cliffs and differences in the findings")
        );
        let a = answer_of(Vec::new(), named("difference ", 6));
        assert_eq!(a.items.len(), MOST);
        assert_eq!(
            a.more_line().as_deref(),
            Some("… and 1 more cliff or difference in the findings")
        );
        let a = answer_of(named("cliff ", 2), named("difference ", 1));
        assert_eq!(a.items.len(), 3);
        assert_eq!(a.more_line(), None);
        let a = answer_of(Vec::new(), named("difference ", 1239));
        assert_eq!(
            a.more_line().as_deref(),
            Some("… and 1,234 more cliffs and differences in the findings")
        );
    }

    /// The size sweep's cliffs as cliffs.json keeps them (values measured here): one line
    /// per allocator and pair of sizes, its variants together; confirmed ones lead, a
    /// cliff at no known threshold comes last, and an unresolved one is no headline.
    #[test]
    fn cliffs_lead_confirmed_first_one_line_per_allocator_and_sizes() {
        let base = r#""workload":"scale","threads":1,"metric":"minor faults","probes":15"#;
        let cliffs = vec![
            cliff(&format!(
                r#"{{"allocator":"mimalloc","variant":"out-of-place",{base},"below_size":1000,"below_value":0.0,"above_size":1001,"above_value":2.0}}"#
            )),
            cliff(&format!(
                r#"{{"allocator":"jemalloc","variant":"in-place",{base},"below_size":916983,"below_value":0.0,"above_size":917058,"above_value":1792.0,"confirmation":{{"spec":"jemalloc:oversize_threshold=16M","threshold":"jemalloc's oversize_threshold (8.0 MiB)","predicted":1834497,"below":1834435,"above":1834519,"verdict":"confirmed"}}}}"#
            )),
            cliff(&format!(
                r#"{{"allocator":"jemalloc","variant":"fused",{base},"below_size":916983,"below_value":0.0,"above_size":917058,"above_value":1792.0}}"#
            )),
            cliff(&format!(
                r#"{{"allocator":"system","variant":"out-of-place",{base},"below_size":8337,"below_value":0.0,"above_size":8338,"above_value":1.0,"confirmation":{{"spec":"system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K","threshold":"glibc's M_TOP_PAD (128.0 KiB default)","predicted":16384,"predicted_to":16640,"below":16501,"above":16502,"verdict":"confirmed"}}}}"#
            )),
            cliff(&format!(
                r#"{{"allocator":"system","variant":"in-place",{base},"below_size":2000000,"below_value":0.0,"above_size":2965821,"above_value":445.0,"unresolved":"the probes saw none"}}"#
            )),
        ];
        let items = cliff_lines(&cliffs, false);
        assert_eq!(items.len(), 3, "{items:?}");
        // The leading cliff's figures: its sizes, both variants' changes, the threshold
        // it is at and the confirmation that moved it.
        match &items[0].figures {
            Some(Figures::Cliff(f)) => {
                assert_eq!((f.below_size, f.above_size), (916_983, 917_058));
                assert_eq!(f.changes.len(), 2);
                assert_eq!(f.cause, "at");
                assert_eq!(
                    f.confirmation.as_ref().map(|c| c.verdict.as_str()),
                    Some("confirmed")
                );
            }
            other => panic!("{other:?}"),
        }
        let lines: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
        assert!(
            lines[0].starts_with("jemalloc changes between 916,983 and 917,058 elements"),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains("in-place: minor faults 0 → 1,792; fused: minor faults 0 → 1,792"),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains("predicted from 916,993 elements"),
            "{}",
            lines[0]
        );
        assert!(
            lines[0]
                .ends_with("under jemalloc:oversize_threshold=16M (rule: 1,834,497): confirmed"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with("system changes between 8,337 and 8,338"),
            "{}",
            lines[1]
        );
        // glibc's storm onset, at M_TOP_PAD's window (two buffers), moved into the
        // window its rule gives under the moved knobs.
        assert!(
            lines[1].ends_with(
                "moved with it to 16,501–16,502 under system:mmap_threshold=1M,top_pad=256K,trim_threshold=256K (rule: 16,384 to 16,640): confirmed"
            ),
            "{}",
            lines[1]
        );
        assert!(
            lines[1].contains(
                "at glibc's M_TOP_PAD (128.0 KiB default), predicted from 8,192 to 8,448 elements"
            ),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("mimalloc changes between 1,000 and 1,001"),
            "{}",
            lines[2]
        );
        assert!(lines[2].contains("at no known threshold"), "{}", lines[2]);
    }
}
