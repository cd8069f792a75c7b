//! The answer on the console, laid out in the reader's width: per allocator, each variant
//! against in-place with its cause in words and what removes it; per variant, the
//! fastest allocator and the others against it. The findings are
//! [`crate::analysis::answer`]'s; this only renders them.

use crate::analysis::answer::{Answer, Finding};
use crate::analysis::stats::Verdict;
use crate::fmt::{fmt_ns, human_bytes, wrap};

/// The widest allocator name the name column takes; a longer one gets its own line.
const NAME_COLUMN: usize = 24;

/// The answer in `width` columns, after its `heading` line.
pub fn console(answer: &Answer, heading: &str, width: usize) -> String {
    let mut s = wrap(heading, width, "", "  ");
    let name_w = answer
        .allocators
        .iter()
        .map(|a| a.subject.chars().count())
        .filter(|n| *n <= NAME_COLUMN)
        .max()
        .unwrap_or(8)
        + 2;
    let pad = " ".repeat(name_w);
    let deeper = " ".repeat(name_w + 2);
    for a in &answer.allocators {
        let mut first: Option<String> = Some(if a.subject.chars().count() + 2 > name_w {
            s.push_str(&a.subject);
            s.push('\n');
            pad.clone()
        } else {
            format!("{:name_w$}", a.subject)
        });
        let mut lead = || first.take().unwrap_or_else(|| pad.clone());
        if a.items.is_empty() {
            s.push_str(&wrap(
                "no variant differs from in-place by a verdict or by its counts",
                width,
                &lead(),
                &pad,
            ));
            continue;
        }
        let (caused, plain): (Vec<&Finding>, Vec<&Finding>) =
            a.items.iter().partition(|f| f.cause.is_some());
        for f in &caused {
            s.push_str(&wrap(
                &format!("{} vs {}: {}", f.variant, f.against, f.words()),
                width,
                &lead(),
                &deeper,
            ));
            if let Some(cause) = &f.cause {
                s.push_str(&wrap(&cause.text, width, &format!("{pad}  why: "), &deeper));
            }
            if !f.removed_by.is_empty() {
                s.push_str(&wrap(
                    &f.removed_by.join("; "),
                    width,
                    &format!("{pad}  removed by: "),
                    &deeper,
                ));
            }
        }
        if !plain.is_empty() {
            let text = plain
                .iter()
                .map(|f| format!("{} vs {}: {}", f.variant, f.against, f.words()))
                .collect::<Vec<_>>()
                .join("; ");
            s.push_str(&wrap(&text, width, &lead(), &deeper));
        }
    }
    if !answer.variants.is_empty() {
        s.push('\n');
    }
    for v in &answer.variants {
        // The causes are the allocators' lines above; here only who is how much slower.
        let mut text = format!(
            "{} (p50 {}, RSS {})",
            v.fastest,
            v.p50_ns.map_or("n/a".into(), |p| fmt_ns(p as f64)),
            v.rss_end_bytes.map_or("n/a".into(), human_bytes)
        );
        let same: Vec<&str> = v
            .others
            .iter()
            .filter(|f| f.comparison.verdict == Some(Verdict::NoSignificantDifference))
            .map(|f| f.subject.as_str())
            .collect();
        let slower: Vec<String> = v
            .others
            .iter()
            .filter(|f| f.comparison.verdict != Some(Verdict::NoSignificantDifference))
            .map(|f| format!("{} {}", f.subject, f.words()))
            .collect();
        if !same.is_empty() {
            text.push_str(&format!("; no significant difference: {}", same.join(", ")));
        }
        if !slower.is_empty() {
            text.push_str(&format!("; {}", slower.join(", ")));
        }
        s.push_str(&wrap(
            &text,
            width,
            &format!("fastest {}: ", v.variant),
            "  ",
        ));
    }
    s.push_str(&price_console(&answer.price, width));
    if !answer.open.is_empty() {
        s.push_str(&wrap(
            &format!(
                "{} more comparison(s) have neither a verdict nor a difference in counts: noise so far, not findings (more rounds: --max-time; a quieter machine)",
                answer.open.len()
            ),
            width,
            "",
            "  ",
        ));
    }
    s
}

/// The width of a column of `names`: the longest up to [`NAME_COLUMN`] (8 without any),
/// plus two spaces.
fn name_width<'a>(names: impl Iterator<Item = &'a str>) -> usize {
    names
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(8)
        .min(NAME_COLUMN)
        + 2
}

/// The lead of a line named `name` in a column `w` wide after two spaces, and the
/// text `s` gets first: a name too long for the column takes a line of its own.
fn named_lead(s: &mut String, name: &str, w: usize) -> String {
    if name.chars().count() + 2 > w {
        s.push_str(&format!("  {name}\n"));
        " ".repeat(w + 2)
    } else {
        format!("  {name:w$}")
    }
}

/// The price of speed on the console, in `width` columns: a heading per group (workload,
/// variant, size, base), then one line per allocator: its time against the base and the
/// memory it holds more or less, on average and at its end. The sentences of
/// [`crate::analysis::price`], laid out from their figures.
pub fn price_console(items: &[crate::analysis::findings::Item], width: usize) -> String {
    use crate::model::metric::{MEM_LAST, MEM_MEAN};
    let prices: Vec<&crate::analysis::findings::PriceFigures> = items
        .iter()
        .filter_map(crate::analysis::findings::Item::price)
        .collect();
    let name_w = name_width(prices.iter().map(|p| p.allocator.as_str()));
    let mut s = String::new();
    let mut group = None;
    let bursts: Vec<&crate::analysis::findings::AfterBurstFigures> = items
        .iter()
        .filter_map(crate::analysis::findings::Item::after_burst)
        .collect();
    let burst_w = name_width(bursts.iter().map(|b| b.allocator.as_str()));
    for p in prices {
        let key = (
            p.workload,
            p.variant,
            p.size,
            p.threads,
            p.against_allocator.clone(),
        );
        if group.as_ref() != Some(&key) {
            let head = format!(
                "the price of speed ({} {}, {} elements, {}): time and memory held against {}",
                p.workload,
                p.variant,
                crate::fmt::group_thousands(p.size as i64),
                crate::fmt::Threads(p.threads),
                p.against_allocator
            );
            s.push_str(&wrap(&head, width, "", "  "));
            group = Some(key);
        }
        let mib = |v: f64| format!("{:.1}", v / 1048576.0);
        let delta = |m| match (p.against_memory[m], p.memory[m]) {
            (Some(b), Some(n)) => {
                let d = (n - b) / 1048576.0;
                format!(
                    "{}{d:.1} MiB ({} vs {})",
                    if d >= 0.0 { "+" } else { "" },
                    mib(n),
                    mib(b)
                )
            }
            _ => "n/a".into(),
        };
        let text = format!(
            "{}; {} on average, {} at its end",
            crate::analysis::answer::phrase(&p.comparison),
            delta(MEM_MEAN),
            delta(MEM_LAST)
        );
        let lead = named_lead(&mut s, &p.allocator, name_w);
        s.push_str(&wrap(&text, width, &lead, &" ".repeat(name_w + 4)));
    }
    let mut group = None;
    for b in bursts {
        let key = (
            b.workload,
            b.variant,
            b.size,
            b.threads,
            b.idle_ms.to_bits(),
        );
        if group != Some(key) {
            let head = format!(
                "after the burst ({} {}, {} elements, {}): resident at the peak → once every buffer was freed → after {} s idle; of that last, MiB of live data, held free by the allocator (its own figure) and other",
                b.workload,
                b.variant,
                crate::fmt::group_thousands(b.size as i64),
                crate::fmt::Threads(b.threads),
                crate::fmt::trim_float(b.idle_ms / 1e3)
            );
            s.push_str(&wrap(&head, width, "", "  "));
            group = Some(key);
        }
        let mib = |v: Option<f64>| v.map_or("n/a".into(), |v| format!("{:.1}", v / 1048576.0));
        // What the end's figure is made of, where the allocator says what it holds.
        let split = match &b.held {
            Some(h) => match (h.held_free, h.outside) {
                (Some(free), Some(out)) => format!(
                    "; {:.1} live, {:.1} held free by it, {:.1} other",
                    h.live as f64 / 1048576.0,
                    free as f64 / 1048576.0,
                    out as f64 / 1048576.0
                ),
                _ => format!("; {:.1} live", h.live as f64 / 1048576.0),
            },
            None => String::new(),
        };
        let text = format!(
            "{} → {} → {} MiB; {}{split}",
            mib(b.memory[crate::model::metric::MEM_PEAK]),
            mib(b.memory[crate::model::metric::FREED]),
            mib(b.memory[MEM_LAST]),
            crate::analysis::price::given_back(&b.memory)
        );
        let lead = named_lead(&mut s, &b.allocator, burst_w);
        s.push_str(&wrap(&text, width, &lead, &" ".repeat(burst_w + 4)));
    }
    // Huge pages: per variant, the cells whose time or memory moved (a decided
    // difference, or 1 MiB or more held on average), one line each.
    let huge: Vec<&crate::analysis::findings::HugePagesFigures> = items
        .iter()
        .filter_map(crate::analysis::findings::Item::huge_pages)
        .collect();
    let group_of = |h: &crate::analysis::findings::HugePagesFigures| {
        (h.workload, h.variant, h.size, h.threads)
    };
    // Shown: those that moved ([`crate::analysis::findings::HugePagesFigures::moved`]).
    let mut shown: Vec<_> = huge.iter().filter(|h| h.moved()).collect();
    // Grouped (stable: the cells' order within a group).
    let order: Vec<_> = huge
        .iter()
        .map(|h| group_of(h))
        .fold(Vec::new(), |mut v, g| {
            if !v.contains(&g) {
                v.push(g);
            }
            v
        });
    shown.sort_by_key(|h| order.iter().position(|g| *g == group_of(h)));
    let labels: Vec<String> = shown
        .iter()
        .map(|h| format!("{} thp={}", h.allocator, h.thp))
        .collect();
    let huge_w = name_width(labels.iter().map(String::as_str));
    let mut group = None;
    for (h, label) in shown.iter().zip(&labels) {
        let key = group_of(h);
        if group != Some(key) {
            let head = format!(
                "huge pages ({} {}, {} elements, {}): against the same cell with THP off ({} of {} shown)",
                h.workload,
                h.variant,
                crate::fmt::group_thousands(h.size as i64),
                crate::fmt::Threads(h.threads),
                shown.iter().filter(|x| group_of(x) == key).count(),
                huge.iter().filter(|x| group_of(x) == key).count(),
            );
            s.push_str(&wrap(&head, width, "", "  "));
            group = Some(key);
        }
        let text = format!(
            "{}; {}",
            crate::analysis::answer::phrase(&h.comparison),
            crate::analysis::price::huge_page_short(h)
        );
        let lead = named_lead(&mut s, label, huge_w);
        s.push_str(&wrap(&text, width, &lead, &" ".repeat(huge_w + 4)));
    }
    s
}

/// compare's first screen in the reader's width: the answer (each variant against
/// in-place with its cause and what removes it, each allocator against the fastest)
/// under its `what` ("scale, 1,000,000 elements, 6 processes per cell"), the table that
/// fits, the `notes`, the counters that were unavailable, and how it was measured;
/// `--verbose` has every column.
pub fn compare_screen(
    answer: &Answer,
    outcomes: &[crate::model::record::Outcome],
    rows: &[crate::model::summary::SummaryRow],
    what: &str,
    method: &str,
    notes: &[String],
    incomplete: Option<&str>,
) -> String {
    let width = crate::fmt::screen_width();
    let mut s = String::new();
    if let Some(note) = incomplete {
        s.push_str(&wrap(note, width, "", "  "));
    }
    let heading = format!(
        "{what}: each variant against in-place, each allocator against the fastest ({} intervals of paired rounds)",
        crate::analysis::stats::level_text(answer.level)
    );
    s.push_str(&console(answer, &heading, width));
    s.push('\n');
    s.push_str(&crate::export::table::to_compact_table(rows));
    let unavailable: Vec<String> = crate::analysis::cells::unavailable_notes(outcomes)
        .into_iter()
        .map(|n| format!("note: {n}"))
        .collect();
    if !notes.is_empty() || !unavailable.is_empty() {
        s.push('\n');
    }
    for n in notes.iter().chain(&unavailable) {
        s.push_str(&wrap(n, width, "", "  "));
    }
    s.push('\n');
    s.push_str(&wrap(method, width, "", "  "));
    s.push_str(&wrap(
        "every column, each run's allocator statistics and the machine: --verbose; every figure: --format csv or json",
        width,
        "",
        "  ",
    ));
    s
}
