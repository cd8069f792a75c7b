//! A results folder's findings as data: each answer item is its sentence and the figures
//! it rests on (the cells compared, the ratio with its interval and verdict, the counts
//! per iteration of both; or a cliff's sizes, changes, threshold and confirmation), so
//! that findings.json, the console, REPORT.md and report.html carry the same items and
//! a script can read the lab's answer without parsing prose.

use crate::analysis::cliff::Confirmation;
use crate::analysis::stats::{Comparison, Verdict};
use crate::model::metric::COUNTS;
use crate::model::spec::{Variant, Workload};
use crate::model::summary::SummaryRow;
use serde::Serialize;
use std::collections::BTreeMap;

/// One item of an answer: its sentence, and what it rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Item {
    /// The sentence every surface prints, word for word.
    pub text: String,
    /// The same words in parts, where a surface groups items under their lead and lines
    /// up their subjects (the console, the index): `text` is "{lead}: {subject} {body}".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parts: Option<Parts>,
    /// The figures behind it (none for a sentence that is not a measured finding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
    /// Where a cell it rests on has fewer processes than planned (a run stopped by Ctrl-C
    /// or a kill): how many each has. Set by [`Item::marked`] alone, which also says it
    /// in the words; absent where every cell is whole (or no plan says how many).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<Shortfall>,
}

/// The processes behind a finding's cells, where one has fewer than planned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    /// Each cell's processes with a result, in the order of [`Figures::cells`] (the base
    /// first, where there is one).
    pub processes: Vec<usize>,
    /// The processes each cell was to have.
    pub planned: usize,
}

/// A cell a finding rests on: (allocator label with its THP mode, workload, variant,
/// size, threads).
pub type CellKey = (String, Workload, Variant, u64, u32);

impl Shortfall {
    /// The shortfall of the cells `keys` among `cells`, where any has fewer processes
    /// with a result than `planned`; None where each has them all, none is found, or no
    /// plan says how many.
    pub fn of(
        keys: &[CellKey],
        cells: &[&crate::model::record::Cell],
        planned: Option<usize>,
    ) -> Option<Shortfall> {
        let planned = planned?;
        let processes: Vec<usize> = keys
            .iter()
            .map(|(label, w, v, n, t)| {
                cells
                    .iter()
                    .find(|c| {
                        c.spec.workload == *w
                            && c.spec.variant == *v
                            && c.spec.size == *n
                            && c.spec.threads == *t
                            && c.spec.allocator_label() == *label
                    })
                    .map_or(0, |c| c.records().count())
            })
            .collect();
        (!processes.is_empty() && processes.iter().any(|&p| p < planned))
            .then_some(Shortfall { processes, planned })
    }

    /// " (INCOMPLETE: 1 and 2 of 2 processes)".
    pub fn words(&self) -> String {
        let counts: Vec<String> = self.processes.iter().map(|p| p.to_string()).collect();
        let list = match counts.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => counts.join(""),
        };
        format!(" (INCOMPLETE: {list} of {} processes)", self.planned)
    }
}

/// An item's words in parts (see [`Item::parts`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Parts {
    /// What the items of a group share: "price of speed, scale out-of-place at 1,000,000
    /// elements (1 thread)".
    pub lead: String,
    /// Whom the item is of: "jemalloc".
    pub subject: String,
    /// What it says of it.
    pub body: String,
}

impl Item {
    /// Its price-of-speed figures, where it is one.
    pub fn price(&self) -> Option<&PriceFigures> {
        match &self.figures {
            Some(Figures::Price(p)) => Some(p),
            _ => None,
        }
    }

    /// Its after-the-burst figures, where it is one.
    pub fn after_burst(&self) -> Option<&AfterBurstFigures> {
        match &self.figures {
            Some(Figures::AfterBurst(b)) => Some(b),
            _ => None,
        }
    }

    /// Its huge-pages figures, where it is one.
    pub fn huge_pages(&self) -> Option<&HugePagesFigures> {
        match &self.figures {
            Some(Figures::HugePages(h)) => Some(h),
            _ => None,
        }
    }

    /// A sentence without figures.
    pub fn text(text: impl Into<String>) -> Self {
        Item {
            text: text.into(),
            parts: None,
            figures: None,
            incomplete: None,
        }
    }

    /// The item with its completeness: where `short` says a cell it rests on has fewer
    /// processes than planned, that is its [`Item::incomplete`] and its words (text and
    /// body alike) end with it. The one place an item's completeness is set, for every
    /// kind of finding and so for every surface that renders them.
    pub fn marked(mut self, short: Option<Shortfall>) -> Self {
        if let Some(s) = &short {
            let words = s.words();
            self.text.push_str(&words);
            if let Some(p) = &mut self.parts {
                p.body.push_str(&words);
            }
        }
        self.incomplete = short;
        self
    }

    /// The item marked ([`Item::marked`]) by the processes its figures' cells have among
    /// `cells`, against the `planned` of each.
    pub fn rests_on(self, cells: &[&crate::model::record::Cell], planned: Option<usize>) -> Self {
        let keys = self
            .figures
            .as_ref()
            .map(Figures::cells)
            .unwrap_or_default();
        let short = Shortfall::of(&keys, cells, planned);
        self.marked(short)
    }

    /// An item worded in parts: its text "{lead}: {subject} {body}".
    pub fn parted(lead: String, subject: String, body: String, figures: Figures) -> Self {
        Item {
            text: format!("{lead}: {subject} {body}"),
            parts: Some(Parts {
                lead,
                subject,
                body,
            }),
            figures: Some(figures),
            incomplete: None,
        }
    }
}

/// What an answer item rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Figures {
    /// One allocator's exact change between two neighbouring sizes.
    Cliff(CliffFigures),
    /// A cell against another measured in the same rounds.
    Difference(Box<DifferenceFigures>),
    /// A user's command under one allocator against another, paired by round.
    Command(CommandFigures),
    /// One traced allocator: each kind of event, how many, and where it came from.
    Trace(TraceFigures),
    /// A command's cliff over sizes (`alloclab sweep`), as its cliffs.json keeps it.
    SweepCliff(serde_json::Value),
    /// An allocator against glibc's on the same cells: its time and the memory it holds.
    Price(Box<PriceFigures>),
    /// One cell's memory after its burst: held when its buffers were freed, after the
    /// idle phase, and how long until half was given back.
    AfterBurst(Box<AfterBurstFigures>),
    /// A cell with huge pages (the system's mode, or advised) against the same cell with
    /// THP off for the worker.
    HugePages(Box<HugePagesFigures>),
    /// Where a cell's output buffers fell against 64-byte boundaries over its processes,
    /// and whether time followed it.
    Alignment(Box<AlignmentFigures>),
    /// A service cell's tail latency at its rate, against the lowest of that rate.
    ServiceTail(Box<ServiceTailFigures>),
}

/// What a service cell's tail-latency sentence rests on: medians over its processes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServiceTailFigures {
    /// The cell's allocator label, and that of the cell with the lowest p99 at its rate
    /// (itself where it is that cell).
    pub allocator: String,
    pub against_allocator: String,
    pub workload: Workload,
    pub variant: Variant,
    /// The offered rate, requests per second.
    pub size: u64,
    pub threads: u32,
    /// Latency from the requests' intended starts.
    pub p99_ns: Option<f64>,
    pub p999_ns: Option<f64>,
    /// The requests' own p99, from their actual starts.
    pub service_p99_ns: Option<f64>,
    pub served_per_s: Option<f64>,
    /// Resident set and live bytes at the end of the measured phase, and their ratio.
    pub resident_end_bytes: Option<f64>,
    pub live_end_bytes: Option<f64>,
    pub resident_per_live: Option<f64>,
    /// Its p99 over the lowest's, paired by round; None for the lowest itself.
    pub comparison: Option<Comparison>,
}

impl Figures {
    /// The cells it rests on, the base first (where it has one); none for a cliff, a
    /// command's comparison, a trace or a sweep (whose completeness is their own).
    pub fn cells(&self) -> Vec<CellKey> {
        // As [`crate::model::run::RunSpec::allocator_label`] words it.
        let label = |spec: &str, thp: crate::model::spec::Thp| match thp {
            crate::model::spec::Thp::System => spec.to_string(),
            crate::model::spec::Thp::Never => format!("{spec} thp=never"),
            crate::model::spec::Thp::Advise => format!("{spec} thp=advise"),
        };
        match self {
            Figures::Difference(d) => vec![
                (
                    d.against_allocator.clone(),
                    d.workload,
                    d.against_variant,
                    d.size,
                    d.threads,
                ),
                (
                    d.allocator.clone(),
                    d.workload,
                    d.variant,
                    d.size,
                    d.threads,
                ),
            ],
            Figures::Price(p) => vec![
                (
                    p.against_allocator.clone(),
                    p.workload,
                    p.variant,
                    p.size,
                    p.threads,
                ),
                (
                    p.allocator.clone(),
                    p.workload,
                    p.variant,
                    p.size,
                    p.threads,
                ),
            ],
            Figures::AfterBurst(b) => {
                vec![(
                    b.allocator.clone(),
                    b.workload,
                    b.variant,
                    b.size,
                    b.threads,
                )]
            }
            Figures::HugePages(h) => vec![
                (
                    label(&h.allocator, crate::model::spec::Thp::Never),
                    h.workload,
                    h.variant,
                    h.size,
                    h.threads,
                ),
                (
                    label(&h.allocator, h.thp),
                    h.workload,
                    h.variant,
                    h.size,
                    h.threads,
                ),
            ],
            Figures::Alignment(a) => {
                vec![(
                    a.allocator.clone(),
                    a.workload,
                    a.variant,
                    a.size,
                    a.threads,
                )]
            }
            Figures::ServiceTail(t) => {
                let mut keys = vec![(
                    t.allocator.clone(),
                    t.workload,
                    t.variant,
                    t.size,
                    t.threads,
                )];
                if t.against_allocator != t.allocator {
                    keys.insert(
                        0,
                        (
                            t.against_allocator.clone(),
                            t.workload,
                            t.variant,
                            t.size,
                            t.threads,
                        ),
                    );
                }
                keys
            }
            Figures::Cliff(_)
            | Figures::Command(_)
            | Figures::Trace(_)
            | Figures::SweepCliff(_) => Vec::new(),
        }
    }
}

impl HugePagesFigures {
    /// Whether huge pages moved this cell enough to show where room is short: a decided
    /// time difference; or, under the machine's own THP mode (what a user gets without
    /// asking), 1 MiB or more held on average. Kept as [`HugePagesFigures::moved`].
    pub fn moves(&self) -> bool {
        use crate::model::metric::MEM_MEAN;
        matches!(
            self.comparison.verdict,
            Some(Verdict::Faster | Verdict::Slower)
        ) || self.thp == crate::model::spec::Thp::System
            && matches!(
                (self.memory[MEM_MEAN], self.against_memory[MEM_MEAN]),
                (Some(a), Some(b)) if (a - b).abs() >= 1048576.0
            )
    }
}

/// Where one cell's output buffers fell, and what that did to its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlignmentFigures {
    /// The allocator (with its knobs and THP mode).
    pub allocator: String,
    pub workload: Workload,
    pub variant: Variant,
    pub size: u64,
    pub threads: u32,
    /// The output buffer's size in bytes.
    pub bytes: u64,
    /// Processes whose output buffer was mostly 0, 16, 32 and 48 bytes past a 64-byte
    /// boundary.
    pub processes_by_mod_64: [usize; 4],
    /// Those 16 bytes past a 32-byte boundary against those on one (their p50s, not
    /// paired: the Hodges–Lehmann ratio and its Mann–Whitney interval), where each side
    /// has at least [`crate::analysis::layout::LEAST_PER_SIDE`] processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_against_on_32: Option<Comparison>,
    /// Whether time followed alignment: that comparison decided faster or slower.
    pub moved: bool,
}

/// What a huge-pages sentence rests on: the cell's time against the same cell without
/// huge pages, its faults split by the size they mapped, and its coverage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HugePagesFigures {
    /// The allocator (with its knobs) of both cells.
    pub allocator: String,
    /// The cell's THP mode (`system` or `advise`); the base's is `never`.
    pub thp: crate::model::spec::Thp,
    pub variant: Variant,
    pub workload: Workload,
    pub threads: u32,
    pub size: u64,
    /// The cell's time over the base's, paired by round.
    pub comparison: Comparison,
    /// Each side's per-iteration figures (medians over its processes): minor faults,
    /// huge-page faults, bytes faulted in.
    pub per_iter: crate::model::metric::Figures,
    pub against_per_iter: crate::model::metric::Figures,
    /// Each side's memory figures (huge-page coverage among them).
    pub memory: crate::model::metric::MemoryFigures,
    pub against_memory: crate::model::metric::MemoryFigures,
    /// Whether huge pages moved it enough to be shown where room is short
    /// ([`HugePagesFigures::moves`]).
    pub moved: bool,
}

/// What an after-the-burst sentence rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AfterBurstFigures {
    pub allocator: String,
    pub variant: Variant,
    pub workload: Workload,
    pub threads: u32,
    pub size: u64,
    /// How long the workers idled, ms.
    pub idle_ms: f64,
    /// Processes behind the medians.
    pub processes: usize,
    /// The cell's memory figures (medians over its processes; `half_returned_ms` null
    /// where half or more of them never gave half back).
    pub memory: crate::model::metric::MemoryFigures,
    /// The allocator's own statistics at the end of the idle, as its first process read
    /// them (jemalloc's stats.*, mimalloc's process info, TCMalloc's properties, glibc's
    /// mallinfo2), in bytes; empty where it gives none.
    pub allocator_stats: std::collections::BTreeMap<String, u64>,
    /// What it held at the end of the idle, split into the program's live data, what the
    /// allocator holds free and the rest of the process; None in records from before.
    pub held: Option<HeldSplit>,
}

/// What a process held at the end of its idle phase, split three ways: the program's
/// live data (the lab's own count of bytes allocated and not freed), what the allocator
/// holds beyond it (its own figure of what it holds, less the live data: free chunks,
/// cached pages, rounding), and the rest of the resident set (code, stacks, the lab).
/// Every figure is a size, never below zero: where the allocator's figure is below the
/// live data or above the resident set, the split says by how much instead
/// (`live_beyond_figure`, `not_resident`) and leaves that part empty.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeldSplit {
    /// The resident set at the end of the idle (the kernel's, sampled), bytes.
    pub resident: u64,
    /// The program's live data, bytes.
    pub live: u64,
    /// What the allocator says it holds, and which of its figures that is; None where
    /// it gives none.
    pub allocator_holds: Option<u64>,
    pub allocator_figure: Option<&'static str>,
    /// allocator_holds − live: what it keeps free; None without its figure, or where
    /// the figure is below the live data.
    pub held_free: Option<u64>,
    /// live − allocator_holds where the figure is below the live data: how much of the
    /// live data the figure leaves out (snmalloc's leaves out its large allocations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_beyond_figure: Option<u64>,
    /// resident − allocator_holds: the rest of the process (code, stacks, and whatever
    /// the allocator's figure leaves out); None without its figure, or where the figure
    /// is above the resident set.
    pub outside: Option<u64>,
    /// allocator_holds − resident where the figure is above the resident set: how much
    /// of what it counts is not resident (mapped and never touched, or given back while
    /// still counted, as mimalloc's commit accounting does after a purge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_resident: Option<u64>,
}

impl HeldSplit {
    /// The split of `resident` bytes, `live` of them live data, by `allocator`'s own
    /// statistics `stats`.
    pub fn of(
        allocator: crate::model::spec::Allocator,
        stats: &std::collections::BTreeMap<String, u64>,
        live: u64,
        resident: u64,
    ) -> Self {
        use crate::model::spec::Allocator::*;
        let get = |k: &str| stats.get(k).copied();
        let holds: Option<(u64, &'static str)> = match allocator {
            Jemalloc => get("resident").map(|v| (v, "stats.resident")),
            System => get("arena")
                .zip(get("hblkhd"))
                .map(|(a, h)| (a + h, "mallinfo2 arena + hblkhd")),
            // Its page heap less what it has returned to the OS already
            // (pageheap_unmapped_bytes is outside it): live data, its caches, its page
            // heap's free pages.
            Tcmalloc => get("heap_size").map(|v| (v, "generic.heap_size")),
            Mimalloc => get("current_rss").map(|v| (v, "current_rss, its commit accounting")),
            Snmalloc => get("current_memory_usage").map(|v| (v, "current_memory_usage")),
            Rpmalloc => None,
        };
        let h = holds.map(|h| h.0);
        let minus = |a: Option<u64>, b: Option<u64>| a.zip(b).and_then(|(a, b)| a.checked_sub(b));
        let beyond =
            |a: Option<u64>, b: Option<u64>| a.zip(b).and_then(|(a, b)| (a > b).then(|| a - b));
        HeldSplit {
            resident,
            live,
            allocator_holds: h,
            allocator_figure: holds.map(|h| h.1),
            held_free: minus(h, Some(live)),
            live_beyond_figure: beyond(Some(live), h),
            outside: minus(Some(resident), h),
            not_resident: beyond(h, Some(resident)),
        }
    }

    /// "of the 22.2 MiB its first process held at the end: 533.3 KiB live data, 20.9 MiB held free by the
    /// allocator (its stats.resident: 21.4 MiB), 800.0 KiB outside that figure (…)"; where
    /// the figure is below the live data or above the resident set, by how much.
    pub fn sentence(&self) -> String {
        let b = |v: u64| crate::fmt::human_bytes(v);
        let (Some(h), Some(fig)) = (self.allocator_holds, self.allocator_figure) else {
            return format!(
                "of the {} its first process held at the end: {} live data (the allocator gives no figure of what it holds)",
                b(self.resident),
                b(self.live)
            );
        };
        let free = match (self.held_free, self.live_beyond_figure) {
            (Some(free), _) => format!(
                "{} held free by the allocator (its {fig}: {})",
                b(free),
                b(h)
            ),
            (None, Some(left_out)) => format!(
                "none held free that its own figure shows (its {fig}, {}, is {} less than the live data: it leaves out part of what the program holds)",
                b(h),
                b(left_out)
            ),
            (None, None) => format!("its {fig}: {}", b(h)),
        };
        let rest = match (self.outside, self.not_resident) {
            (Some(out), _) => format!(
                "{} outside that figure (code, stacks, what the figure leaves out)",
                b(out)
            ),
            (None, Some(over)) => format!(
                "its figure is {} more than the resident set: that much of what it counts is not resident, so the rest of the process (code, stacks) cannot be told apart from it",
                b(over)
            ),
            (None, None) => String::new(),
        };
        let mut text = format!(
            "of the {} its first process held at the end: {} live data, {free}",
            b(self.resident),
            b(self.live)
        );
        if !rest.is_empty() {
            text.push_str(", ");
            text.push_str(&rest);
        }
        text
    }
}

/// What a price-of-speed sentence rests on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PriceFigures {
    /// The allocator label of the cell, and of the base (glibc's, "system").
    pub allocator: String,
    pub against_allocator: String,
    pub variant: Variant,
    pub workload: Workload,
    pub threads: u32,
    pub size: u64,
    /// The cell's time over the base's, paired by round.
    pub comparison: Comparison,
    /// Each side's memory over the process's life (medians over its processes).
    pub memory: crate::model::metric::MemoryFigures,
    pub against_memory: crate::model::metric::MemoryFigures,
}

/// A traced allocator (`alloclab trace`): per kind of event its count per iteration (per
/// run for a command) and its causes with their shares; or why the traced run failed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceFigures {
    pub allocator: String,
    /// "iteration" (a built-in cell) or "run" (a command).
    pub per: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    pub attributions: Vec<crate::analysis::trace::Attribution>,
    /// The sentence's parts, one per mechanism and kind of event, in its order: what the
    /// console puts on lines of their own.
    pub lines: Vec<String>,
}

/// A sweep folder's findings.json: the command and its answer, the cliffs its console,
/// REPORT.md and report.html lead with (every point is in sweep.json).
#[derive(Clone, Debug, Serialize)]
pub struct SweepFindings {
    pub schema: &'static str,
    pub command: Vec<String>,
    pub complete: bool,
    pub answer: Vec<Item>,
}

/// A trace folder's findings.json: what was traced and the answer its console, REPORT.md
/// and report.html lead with (every event is in trace.json and the timelines).
#[derive(Clone, Debug, Serialize)]
pub struct TraceFindings {
    pub schema: &'static str,
    /// What was traced: "scale out-of-place at 1,000,000 elements", or the command.
    pub traced: String,
    /// A built-in cell's variant and size (None for a command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    pub complete: bool,
    pub answer: Vec<Item>,
}

/// A traced allocator's answer item: the mechanism in one paragraph where there are call
/// stacks, why the traced run failed, or (without stacks) `without`.
pub fn trace_item(
    label: &str,
    failure: Option<&str>,
    mechanism: &[String],
    without: Option<String>,
    per: &'static str,
    attributions: &[crate::analysis::trace::Attribution],
) -> Option<Item> {
    let lines: Vec<String> = match (failure, mechanism.is_empty()) {
        (Some(why), _) => vec![format!("{label}: the traced run failed: {why}")],
        (None, false) => mechanism.to_vec(),
        (None, true) => vec![without?],
    };
    Some(Item {
        text: if mechanism.is_empty() || failure.is_some() {
            lines.join("; ")
        } else {
            crate::analysis::trace::paragraph(&lines)
        },
        parts: None,
        incomplete: None,
        figures: Some(Figures::Trace(TraceFigures {
            allocator: label.to_string(),
            per,
            failed: failure.map(str::to_string),
            attributions: attributions.to_vec(),
            lines,
        })),
    })
}

/// A user's command under `allocator` against `against_allocator` (`alloclab exec`):
/// the wall-time ratio of paired rounds and the counts per run of both (medians over
/// runs; null where a count could not be read).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommandFigures {
    pub allocator: String,
    pub against_allocator: String,
    /// The command's wall time over the base's: median of the per-round ratios.
    pub ratio: f64,
    /// Its interval, where the runs give one.
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    /// "faster", "slower", "no significant difference", "undecided"; none for one run.
    pub verdict: Option<String>,
    pub runs: usize,
    pub against_runs: usize,
    pub counts: BTreeMap<String, Option<f64>>,
    pub against_counts: BTreeMap<String, Option<f64>>,
    /// The cause, where the counts or the evidence show one: its words, the mechanisms
    /// it names with their figures, and what it rests on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<crate::analysis::mechanism::Why>,
}

/// A cliff: where it is, what changes there, the threshold behind it and whether moving
/// that threshold moved it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CliffFigures {
    pub allocator: String,
    pub workload: Workload,
    pub threads: u32,
    /// The largest size without the change and the smallest with it (elements).
    pub below_size: u64,
    pub above_size: u64,
    /// Whether those sizes were bisected to the change; false for a change between two
    /// neighbouring sizes of the sweep (a quick run bisects none).
    pub bisected: bool,
    pub changes: Vec<CliffChange>,
    /// "at", "near" or "none": where the cliff lies against the allocator's known
    /// thresholds.
    pub cause: &'static str,
    /// The threshold it is at or near.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<String>,
    /// What is behind it, in words: the threshold's rule and its knob, or that no known
    /// threshold of the allocator is there.
    pub behind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    /// Where moving the threshold sent it, in words; None where it was not moved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved: Option<String>,
    /// Whether it went where the threshold's rule puts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// What the recorded calls and faults show changes there, per cliff of the group
    /// that was recorded either side.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub what_changes: Vec<crate::analysis::mechanism::Why>,
}

/// One variant's change at a cliff, per iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CliffChange {
    pub variant: Variant,
    /// "minor faults" or "memory syscalls".
    pub metric: String,
    pub below_value: f64,
    pub above_value: f64,
}

/// A cell against its base: the same allocator in place, or its allocator's defaults.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DifferenceFigures {
    /// The allocator label (spec and THP mode) of the cell.
    pub allocator: String,
    pub variant: Variant,
    /// What it is against: its allocator's in-place cell, the fastest of its variant, or
    /// its allocator's defaults.
    pub against: Against,
    /// The base's allocator label.
    pub against_allocator: String,
    pub against_variant: Variant,
    pub workload: Workload,
    pub threads: u32,
    pub size: u64,
    /// The cell's time over the base's, paired by round: median ratio, interval and
    /// verdict.
    pub comparison: Comparison,
    /// The comparison in words ("29.03x slower [28.01x, 30.70x]").
    pub words: String,
    /// Each side's p50 (the median over its processes), ns.
    pub p50_ns: Option<u64>,
    pub against_p50_ns: Option<u64>,
    /// Processes with a result, the cell's and the base's.
    pub processes: usize,
    pub against_processes: usize,
    /// Counts per iteration (medians over processes), the cell's and the base's.
    pub counts: CountsPerIter,
    pub against_counts: CountsPerIter,
    /// Why: the count differences and the mechanism the recorded calls show, with their
    /// figures, or what the sentence rests on instead.
    pub cause: crate::analysis::mechanism::Why,
    /// What removes the cost, measured in the same rounds (another allocator, reusing
    /// one output buffer) or a knob set to measure: the item's "removed by" words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub removed_by: Vec<String>,
}

/// What a finding compares its cell with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Against {
    /// The same allocator's in-place cell.
    InPlace,
    /// The fastest allocator of the same variant.
    Fastest,
    /// The same allocator with its defaults (the cell is a knob set).
    Defaults,
}

/// A cell's counts per iteration keyed by the registry's names (summary.csv's columns,
/// [`crate::model::metric::COUNTS`]); null where the count could not be read.
pub type CountsPerIter = BTreeMap<&'static str, Option<f64>>;

/// A summary row's counts per iteration, every one in the registry.
pub fn counts_of(r: &SummaryRow) -> CountsPerIter {
    COUNTS.iter().map(|m| (m.key, r.per_iter[*m])).collect()
}

/// Where findings.json says what it holds.
pub const SCHEMA: &str = "alloclab-findings/1";

/// A results folder's findings.json: the answer the console, REPORT.md and report.html
/// lead with (the same items, word for word), and the rest of the findings as figures.
#[derive(Clone, Debug, Serialize)]
pub struct FolderFindings {
    pub schema: &'static str,
    pub experiment: String,
    /// Whether every planned process (and every step after them) has a result.
    pub complete: bool,
    /// What has no result, where incomplete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// A quick run (`--quick`): mostly one process per cell, no interval, no verdict.
    pub quick: bool,
    /// The noise band of the verdicts (0.02 = ±2 %) and the level their intervals aim at.
    pub noise_threshold: f64,
    pub confidence: f64,
    /// The answer's items, leading first.
    pub answer: Vec<Item>,
    /// The price of speed: each allocator against glibc's where one is at least twice as
    /// fast or slow, with the memory it holds ([`crate::analysis::price`]).
    pub price_of_speed: Vec<Item>,
    /// Cliffs and differences that did not make the answer (they are below).
    pub more: usize,
    /// Every exact cliff found, grouped per allocator and pair of sizes, leading first.
    pub cliffs: Vec<Item>,
    /// Where neighbouring sizes' faults or memory syscalls per element differ 4x or more
    /// and no cliff was bisected from it: the sweep's own changes.
    pub changes: Vec<Item>,
    /// Where each cell's output buffer fell against 64-byte boundaries over its
    /// processes, and whether time followed it ([`crate::analysis::layout`]): every
    /// cell's, those where time moved in the answer too.
    pub alignment: Vec<Item>,
    /// Every comparison of the findings (each variant against its allocator's in-place,
    /// each allocator against the fastest of its variant, each knob set against its
    /// allocator's defaults, at the sizes of interest), worded, with its figures.
    pub comparisons: Vec<Item>,
}
