//! The service workload's answer: at each offered rate, each allocator's tail latency
//! (p99 from the requests' intended starts, over its processes) against the allocator
//! with the lowest, the requests' own times beside it, and the resident memory it held
//! per live byte after the churn; and the highest rate at which each kept its p99 under
//! [`P99_TARGET_NS`] in every process.

use crate::analysis::answer::phrase_than;
use crate::analysis::cells;
use crate::analysis::findings::{Figures, Item, ServiceTailFigures};
use crate::analysis::stats::{self, Comparison};
use crate::fmt::{fmt_ns, human_bytes};
use crate::model::record::{Cell, RunRecord};
use crate::model::spec::Workload;

/// The p99 a service is held to for "the highest rate that holds it": 1 ms from the
/// intended start (the lab's default; each cell's p99 is in findings.json).
pub const P99_TARGET_NS: f64 = 1e6;

/// The median over a cell's processes of `f`.
fn median_of(cell: &Cell, f: impl Fn(&RunRecord) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = cell.records().filter_map(|(_, r)| f(r)).collect();
    stats::median(&v)
}

/// Compares `other`'s p99 with `base`'s, paired by round, as compare pairs p50s.
fn compare_p99(base: &Cell, other: &Cell, threshold: f64) -> Option<Comparison> {
    cells::compare_by(base, other, threshold, |r| r.p99_ns as f64)
}

/// One item per service cell (but the lowest-tailed of its rate, variant and thread
/// count, which the others are against), in the cells' order of rate; then one item
/// per allocator and variant naming the highest rate that held the target.
pub fn tails(cells: &[&Cell], threshold: f64) -> Vec<Item> {
    let service: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.spec.workload == Workload::Service && c.records().next().is_some())
        .copied()
        .collect();
    let mut groups: Vec<(u64, crate::model::spec::Variant, u32)> = service
        .iter()
        .map(|c| (c.spec.size, c.spec.variant, c.spec.threads))
        .collect();
    groups.sort();
    groups.dedup();
    let mut out = Vec::new();
    for (size, variant, threads) in groups {
        let at: Vec<&Cell> = service
            .iter()
            .filter(|c| (c.spec.size, c.spec.variant, c.spec.threads) == (size, variant, threads))
            .copied()
            .collect();
        let p99 = |c: &Cell| median_of(c, |r| Some(r.p99_ns as f64));
        let Some(best) = at
            .iter()
            .copied()
            .filter(|c| p99(c).is_some())
            .min_by(|a, b| {
                p99(a)
                    .unwrap_or(f64::MAX)
                    .total_cmp(&p99(b).unwrap_or(f64::MAX))
            })
        else {
            continue;
        };
        for c in &at {
            if std::ptr::eq(*c, best) {
                continue;
            }
            let Some(cmp) = compare_p99(best, c, threshold) else {
                continue;
            };
            out.push(item(c, best, Some(cmp)));
        }
        out.push(item(best, best, None));
    }
    out.extend(highest_rates(&service));
    out
}

/// The figures and words of one cell against `best` (itself: the lowest tail).
fn item(c: &Cell, best: &Cell, cmp: Option<Comparison>) -> Item {
    let m = |f: &dyn Fn(&RunRecord) -> Option<f64>| median_of(c, f);
    let p99 = m(&|r| Some(r.p99_ns as f64));
    let p999 = m(&|r| Some(r.p999_ns as f64));
    let own_p99 = m(&|r| r.service.as_ref().map(|s| s.service_p99_ns as f64));
    let served = m(&|r| r.service.as_ref().map(|s| s.served_per_s));
    let rss = m(&|r| r.rss_end_bytes.map(|b| b as f64));
    let live = m(&|r| {
        r.service
            .as_ref()
            .and_then(|s| s.live_end_bytes)
            .map(|b| b as f64)
    });
    let per_live = m(&|r| r.service.as_ref()?.resident_per_live(r.rss_end_bytes));
    let processes = c.records().count();
    let lead = format!(
        "tail latency, {} {} at {} ({})",
        c.spec.workload,
        c.spec.variant,
        c.spec.workload.size_words(c.spec.size),
        crate::fmt::Threads(c.spec.threads)
    );
    let show = |v: Option<f64>| v.map_or("?".to_string(), fmt_ns);
    let against = match &cmp {
        Some(cmp) => format!(
            ", {}",
            phrase_than(cmp, &format!("{}'s", best.spec.allocator_label()))
        ),
        None => ", the lowest at this rate".to_string(),
    };
    let memory = match (rss, live, per_live) {
        (Some(rss), Some(live), Some(x)) => format!(
            "; {x:.2} resident bytes per live byte after the churn ({} for {})",
            human_bytes(rss as u64),
            human_bytes(live as u64)
        ),
        _ => "; resident memory per live byte not read".to_string(),
    };
    let why = recorded(c.evidence.as_ref());
    // The loop spins between requests and never yields: an involuntary switch is the
    // host taking the CPU away, and every request meant to start meanwhile waits.
    let preempted =
        m(&|r| Some(r.totals.usage.nivcsw as f64 * 1000.0 / r.iterations.max(1) as f64));
    let preempted = preempted.map_or(String::new(), |p| {
        format!(
            "; preempted by the host {} times per 1,000 requests",
            crate::fmt::fmt_count(p)
        )
    });
    let served_words = match served {
        Some(s) if s < 0.99 * c.spec.size as f64 => format!(
            "; served only {} requests/s",
            crate::fmt::group_thousands(s.round() as i64)
        ),
        _ => String::new(),
    };
    let body = format!(
        "p99 {} from the intended start (own {}; p99.9 {}){against}{memory}{served_words}{preempted}; {why} ({processes} process{})",
        show(p99),
        show(own_p99),
        show(p999),
        if processes == 1 { "" } else { "es" },
    );
    Item::parted(
        lead,
        c.spec.allocator_label(),
        body,
        Figures::ServiceTail(Box::new(ServiceTailFigures {
            allocator: c.spec.allocator_label(),
            against_allocator: best.spec.allocator_label(),
            workload: c.spec.workload,
            variant: c.spec.variant,
            size: c.spec.size,
            threads: c.spec.threads,
            p99_ns: p99,
            p999_ns: p999,
            service_p99_ns: own_p99,
            served_per_s: served,
            resident_end_bytes: rss,
            live_end_bytes: live,
            resident_per_live: per_live,
            comparison: cmp,
        })),
    )
}

/// Per allocator and variant (thread count), the highest measured rate at which every
/// process kept its p99 under [`P99_TARGET_NS`], where more than one rate was measured.
fn highest_rates(service: &[&Cell]) -> Vec<Item> {
    let mut keys: Vec<(String, crate::model::spec::Variant, u32)> = Vec::new();
    for c in service {
        let k = (c.spec.allocator_label(), c.spec.variant, c.spec.threads);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (label, variant, threads) in keys {
        let mut mine: Vec<&Cell> = service
            .iter()
            .filter(|c| c.spec.allocator_label() == label && c.spec.variant == variant)
            .filter(|c| c.spec.threads == threads)
            .copied()
            .collect();
        if mine.len() < 2 {
            continue;
        }
        mine.sort_by_key(|c| c.spec.size);
        let held = |c: &Cell| c.records().all(|(_, r)| (r.p99_ns as f64) < P99_TARGET_NS);
        let words = match mine.iter().rev().find(|c| held(c)) {
            Some(c) => {
                let above = mine.iter().find(|o| o.spec.size > c.spec.size);
                format!(
                    "held p99 under {} from the intended start in every process up to {}{}",
                    fmt_ns(P99_TARGET_NS),
                    c.spec.workload.size_words(c.spec.size),
                    match above {
                        Some(o) => format!(
                            " (at {} it did not)",
                            o.spec.workload.size_words(o.spec.size)
                        ),
                        None => ", the highest rate measured".into(),
                    }
                )
            }
            None => format!(
                "did not hold p99 under {} in every process at any measured rate (the lowest, {})",
                fmt_ns(P99_TARGET_NS),
                mine[0].spec.workload.size_words(mine[0].spec.size)
            ),
        };
        out.push(Item::text(format!(
            "highest rate, service {variant} ({}): {label} {words}",
            crate::fmt::Threads(threads)
        )));
    }
    out
}

/// What a service cell's recorded process did, per 1,000 requests: the calls that give
/// memory back, each by what its arguments say it did (brk down: a trim; munmap of a
/// block the run had mapped; madvise with a releasing advice: a purge), and the faults,
/// split by what had happened to their page before. In a service the rare call is the
/// tail: a count per request would round it away, so none is left out for being rare.
pub fn recorded(recorded: Option<&crate::model::evidence::Recorded>) -> String {
    use crate::model::evidence::Recorded;
    let e = match recorded.map(Recorded::get) {
        Some(Ok(e)) => e,
        Some(Err(why)) => return format!("its memory calls were not recorded ({why})"),
        None => return "its memory calls were not recorded".into(),
    };
    let k = |n: u64| {
        let v = n as f64 * 1000.0 / e.units.max(1.0);
        crate::fmt::fmt_count(v)
    };
    let mib = |b: u64| human_bytes(b);
    let mut parts = Vec::new();
    if e.brk.shrank.calls > 0 {
        parts.push(format!(
            "{} trims (brk that shrank the heap, {} in all)",
            k(e.brk.shrank.calls),
            mib(e.brk.shrank.bytes)
        ));
    }
    if e.unmapped_again.calls > 0 {
        parts.push(format!(
            "{} unmaps of its own blocks ({} in all)",
            k(e.unmapped_again.calls),
            mib(e.unmapped_again.bytes)
        ));
    }
    let purged = e.purged();
    if purged.calls > 0 {
        parts.push(format!(
            "{} purges (madvise that released pages, {} in all)",
            k(purged.calls),
            mib(purged.bytes)
        ));
    }
    let faults = match &e.faults {
        Some(f) => format!(
            "{} faults ({} on pages given back before)",
            k(f.total()),
            k(f.given_back())
        ),
        None => format!(
            "its faults not split by page ({})",
            e.faults_unrecorded
                .as_deref()
                .unwrap_or("their addresses were not recorded")
        ),
    };
    let given = if parts.is_empty() {
        "no call gave memory back".to_string()
    } else {
        parts.join(", ")
    };
    format!(
        "recorded per 1,000 of {} requests: {given}; {faults}",
        crate::fmt::group_thousands(e.units as i64)
    )
}
