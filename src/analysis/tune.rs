//! `alloclab tune`: each allocator's defaults against a curated set of knob combinations
//! on one workload, variant and size, and which combinations remove the faults and
//! syscalls, at what time and RSS cost.

use crate::analysis::explain::describe;
use crate::analysis::stats::{Comparison, Verdict};
use crate::model::knobs::AllocatorSpec;
use crate::model::spec::{Allocator, Choice};
use crate::model::summary::SummaryRow;
use crate::ui::fmt::{fmt_count, fmt_ns, human_bytes};

/// The curated knob sets, each with why it is worth trying.
pub fn curated(a: Allocator) -> Vec<(&'static str, &'static str)> {
    match a {
        Allocator::System => vec![
            ("", "glibc's defaults: dynamic mmap threshold, 128 KiB trim threshold, no top pad"),
            ("top_pad=64M", "keeps 64 MiB at the heap top on every trim, so a freed 8 MB buffer stays mapped; the dynamic thresholds stay on"),
            ("trim_threshold=1G", "trims only above 1 GiB free — but setting it turns the dynamic mmap threshold off, so large buffers go back to mmap at 128 KiB and can fault more"),
            ("trim_threshold=1G,mmap_threshold=1G", "neither trims nor mmaps below 1 GiB: buffers stay in the heap"),
            ("mmap_threshold=64M", "serves buffers below 64 MiB from the heap; also turns the dynamic thresholds off, so the heap top is still trimmed at the default 128 KiB"),
        ],
        Allocator::Jemalloc => vec![
            ("", "jemalloc's defaults: 10 s dirty decay; allocations of 8 MiB or more go to the oversize arena, which purges eagerly"),
            ("dirty_decay_ms=-1", "dirty pages are never purged by decay"),
            ("dirty_decay_ms=-1,muzzy_decay_ms=-1", "neither dirty nor muzzy pages are purged by decay"),
            ("oversize_threshold=16M", "only allocations of 16 MiB or more go to the oversize arena"),
            ("oversize_threshold=64M", "only allocations of 64 MiB or more go to the oversize arena"),
        ],
        Allocator::Mimalloc => vec![
            ("", "mimalloc's defaults: purge after 10 ms, transparent huge pages allowed"),
            ("purge_delay=0", "purges freed memory at once"),
            ("purge_delay=-1", "never purges"),
            ("allow_thp=0", "no transparent huge pages, so that faults count 4 KiB pages as they do for the others"),
        ],
        Allocator::Tcmalloc => vec![("", "TCMalloc's defaults (no run-time knobs in the bundled build)")],
        Allocator::Snmalloc => vec![("", "snmalloc's defaults (it has no run-time knobs)")],
        Allocator::Rpmalloc => vec![("", "rpmalloc's defaults (it has no run-time knobs)")],
    }
}

/// The specs to run for `a`: defaults first.
pub fn specs(a: Allocator) -> Vec<AllocatorSpec> {
    curated(a)
        .into_iter()
        .map(|(knobs, _)| {
            if knobs.is_empty() {
                AllocatorSpec::plain(a)
            } else {
                format!("{a}:{knobs}")
                    .parse()
                    .expect("curated knob sets are valid")
            }
        })
        .collect()
}

/// One verdict line per knob set, against the allocator's defaults (the first row of
/// each allocator). `time[i]` is row i's p50 against its defaults from paired rounds: a
/// set helps only when it is significantly faster.
pub fn verdicts(rows: &[SummaryRow], time: &[Option<Comparison>]) -> Vec<String> {
    let mut lines = Vec::new();
    for a in Allocator::ALL {
        let mine: Vec<(usize, &SummaryRow)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.allocator == *a)
            .collect();
        let Some(&(_, base)) = mine.first() else {
            continue;
        };
        for &(i, r) in mine.iter().skip(1) {
            if !r.status.is_ok() || !base.status.is_ok() {
                lines.push(format!(
                    "{}: failed: {}",
                    r.allocator_spec,
                    r.error.as_deref().unwrap_or("")
                ));
                continue;
            }
            let (bf, rf) = (
                base.minflt_per_iter.unwrap_or(0.0),
                r.minflt_per_iter.unwrap_or(0.0),
            );
            let what = match (base.memory_syscalls_per_iter, r.memory_syscalls_per_iter) {
                (Some(bs), Some(rs)) => {
                    let faults_gone = bf >= 1.0 && rf < 1.0;
                    let calls_gone = bs >= 0.5 && rs < 0.5;
                    match (faults_gone, calls_gone) {
                        (true, true) => "removes the faults and the memory syscalls".to_string(),
                        (true, false) => "removes the faults".to_string(),
                        (false, true) => "removes the memory syscalls".to_string(),
                        _ if rf > bf * 1.5 + 1.0 || rs > bs + 0.5 => format!(
                            "makes it worse: {} faults and {} memory syscalls per iteration (defaults: {} and {})",
                            fmt_count(rf), fmt_count(rs), fmt_count(bf), fmt_count(bs)
                        ),
                        _ => format!(
                            "changes little: {} faults and {} memory syscalls per iteration (defaults: {} and {})",
                            fmt_count(rf), fmt_count(rs), fmt_count(bf), fmt_count(bs)
                        ),
                    }
                }
                _ => format!(
                    "{} faults per iteration (defaults: {})",
                    fmt_count(rf),
                    fmt_count(bf)
                ),
            };
            let time = match (base.p50_ns, r.p50_ns, time.get(i).copied().flatten()) {
                (Some(b), Some(x), Some(c)) => {
                    let call = match c.verdict {
                        Some(Verdict::Faster) => "helps: ",
                        Some(Verdict::Slower) => "costs time: ",
                        _ => "",
                    };
                    format!(
                        "{call}p50 {} vs {}, {}",
                        fmt_ns(x as f64),
                        fmt_ns(b as f64),
                        describe(&c)
                    )
                }
                _ => String::new(),
            };
            let rss = match (base.rss_end_bytes, r.rss_end_bytes) {
                (Some(b), Some(x)) => format!(", RSS {} vs {}", human_bytes(x), human_bytes(b)),
                _ => String::new(),
            };
            // An installed library runs in the system worker: its row is measured
            // against glibc's defaults, which it replaces rather than tunes.
            let instead = if r.allocator_spec.starts_with(a.name()) {
                ""
            } else {
                "instead of glibc, "
            };
            lines.push(format!(
                "{}: {instead}{what}; {time}{rss}",
                r.allocator_spec
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curated_sets_parse_and_start_with_the_defaults() {
        for a in Allocator::ALL {
            let s = specs(*a);
            assert!(s[0].knobs.is_empty());
            // Allocators with knobs have sets to try; the others run their defaults.
            if crate::model::knobs::defs(*a).is_empty() {
                assert_eq!(s.len(), 1, "{a}");
            } else {
                assert!(s.len() >= 4, "{a}");
            }
        }
    }
}
