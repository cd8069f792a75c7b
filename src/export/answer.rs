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

/// The price of speed, what was held after the burst and what huge pages did, on the
/// console in `width` columns: each group's lead as its heading, then one line per item,
/// its subject in a column and its words after it (the items' own parts,
/// [`crate::analysis::price`]'s); of huge pages only those that moved, said how many.
pub fn price_console(items: &[crate::analysis::findings::Item], width: usize) -> String {
    use crate::analysis::findings::Figures;
    let shown: Vec<&crate::analysis::findings::Item> = items
        .iter()
        .filter(|i| match &i.figures {
            Some(Figures::HugePages(h)) => h.moved,
            Some(Figures::Alignment(a)) => a.moved,
            _ => true,
        })
        .collect();
    let name_w = name_width(
        shown
            .iter()
            .filter_map(|i| i.parts.as_ref())
            .map(|p| p.subject.as_str()),
    );
    let mut s = String::new();
    let mut lead: Option<&str> = None;
    for item in &shown {
        let Some(p) = &item.parts else {
            s.push_str(&wrap(&item.text, width, "", "  "));
            continue;
        };
        if lead != Some(p.lead.as_str()) {
            let of_lead = |i: &crate::analysis::findings::Item| {
                i.parts.as_ref().is_some_and(|q| q.lead == p.lead)
            };
            let (k, n) = (
                shown.iter().filter(|i| of_lead(i)).count(),
                items.iter().filter(|i| of_lead(i)).count(),
            );
            let head = if k < n {
                format!(
                    "{} ({k} of {n} shown: those whose time or memory moved):",
                    p.lead
                )
            } else {
                format!("{}:", p.lead)
            };
            s.push_str(&wrap(&head, width, "", "  "));
            lead = Some(p.lead.as_str());
        }
        let l = named_lead(&mut s, &p.subject, name_w);
        s.push_str(&wrap(&p.body, width, &l, &" ".repeat(name_w + 4)));
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
    // Fewer rounds than the paired interval needs: the comparisons' intervals are the
    // unpaired ones over the processes (stats::compare_paired).
    let fewest = rows.iter().filter_map(|r| r.processes).min().unwrap_or(0) as usize;
    let kind = if fewest < crate::analysis::stats::rounds_needed(answer.level) {
        "intervals over the processes, unpaired (too few rounds to pair)"
    } else {
        "intervals of paired rounds"
    };
    // Without an in-place cell (the service has none; --variants may leave it out)
    // there is nothing to hold the variants against: no line says none differs from it.
    let in_place = rows
        .iter()
        .any(|r| r.variant == crate::model::spec::Variant::InPlace);
    let heading = format!(
        "{what}: {}each allocator against the fastest ({} {kind})",
        if in_place {
            "each variant against in-place, "
        } else {
            ""
        },
        crate::analysis::stats::level_text(answer.level)
    );
    let mut shown = answer.clone();
    if !in_place {
        shown.allocators.retain(|a| !a.items.is_empty());
    }
    s.push_str(&console(&shown, &heading, width));
    s.push('\n');
    s.push_str(&crate::export::table::to_compact_table_within(rows, width));
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
