//! `alloclab tune`: each allocator's defaults against a curated set of knob combinations
//! on one workload, variant and size, and which combinations remove the faults and
//! syscalls, at what time and RSS cost.

use crate::analysis::answer::phrase as describe;
use crate::analysis::stats::{Comparison, Verdict};
use crate::fmt::{fmt_count, fmt_ns, human_bytes};
use crate::model::knobs::AllocatorSpec;
use crate::model::metric::{
    RunFigures, MEMORY_SYSCALLS, MINOR_FAULTS, RUN_METRICS, RUN_MINOR_FAULTS, RUN_PEAK_RSS,
};
use crate::model::spec::{Allocator, Choice};
use crate::model::summary::SummaryRow;

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
pub fn verdicts(
    rows: &[SummaryRow],
    time: &[Option<Comparison>],
    why: &[Option<String>],
) -> Vec<String> {
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
                base.per_iter[MINOR_FAULTS].unwrap_or(0.0),
                r.per_iter[MINOR_FAULTS].unwrap_or(0.0),
            );
            let what = match (base.per_iter[MEMORY_SYSCALLS], r.per_iter[MEMORY_SYSCALLS]) {
                (Some(bs), Some(rs)) => {
                    let (ft, st) = (MINOR_FAULTS.named_from(), MEMORY_SYSCALLS.named_from());
                    let faults_gone = bf >= ft && rf < ft;
                    let calls_gone = bs >= st && rs < st;
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
            let why = why
                .get(i)
                .cloned()
                .flatten()
                .map(|w| format!("; why: {w}"))
                .unwrap_or_default();
            lines.push(format!(
                "{}: {instead}{what}; {time}{rss}{why}",
                r.allocator_spec
            ));
        }
    }
    lines
}

/// One knob set of your command's tune, against its allocator's defaults.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SetVerdict {
    pub set: String,
    pub against: String,
    /// Wall time of a run against the defaults' (median of the per-round ratios).
    pub ratio: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub verdict: Option<String>,
    /// Its per-run figures and its defaults' (medians over their runs).
    #[serde(flatten)]
    pub figures: AgainstDefaults,
    /// Median wall time of a run with this set.
    pub wall_ms: Option<f64>,
    pub line: String,
}

/// A set's per-run figures beside its allocator's defaults': in tune's JSON `<key>` and
/// `<key>_defaults` for each registry entry tune shows (those whose runs are searched for
/// behaviours, but the syscalls: faults, peak RSS), then the memory syscalls' sum.
#[derive(Clone, Debug, Default)]
pub struct AgainstDefaults {
    pub set: RunFigures,
    pub defaults: RunFigures,
}

impl serde::Serialize for AgainstDefaults {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for m in RUN_METRICS.iter().filter(|m| m.spread && !m.syscall) {
            map.serialize_entry(m.key, &self.set[*m])?;
            map.serialize_entry(&format!("{}_defaults", m.key), &self.defaults[*m])?;
        }
        map.serialize_entry("memory_syscalls", &self.set.memory_calls())?;
        map.serialize_entry("memory_syscalls_defaults", &self.defaults.memory_calls())?;
        map.end()
    }
}

/// Every set against its allocator's defaults (an installed library against glibc's),
/// from the runs of one session.
pub fn set_verdicts(record: &crate::model::command::ExecRecord) -> Vec<SetVerdict> {
    use crate::analysis::command;
    let rows = command::rows(record);
    let kind = |label: &str| label.split(':').next().unwrap_or(label).to_string();
    let is_builtin =
        |label: &str| crate::model::spec::parse_choice::<Allocator>(&kind(label)).is_ok();
    let mut out = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let defaults = if is_builtin(&r.allocator) {
            kind(&r.allocator)
        } else {
            "system".to_string()
        };
        if r.allocator == defaults {
            continue;
        }
        let Some(b) = rows.iter().position(|x| x.allocator == defaults) else {
            continue;
        };
        let base = &rows[b];
        let c = command::paired(
            &record.allocators[b].runs,
            &record.allocators[i].runs,
            record.noise_threshold,
            record.confidence,
        );
        let failed = r.error.as_ref().or(base.error.as_ref());
        let mut v = SetVerdict {
            set: r.allocator.clone(),
            against: defaults.clone(),
            ratio: c.map(|c| c.ratio),
            ci_low: c.and_then(|c| c.interval.map(|i| i.low)),
            ci_high: c.and_then(|c| c.interval.map(|i| i.high)),
            verdict: c.and_then(|c| c.verdict.map(|v| v.words().to_string())),
            figures: AgainstDefaults {
                set: r.per_run.clone(),
                defaults: base.per_run.clone(),
            },
            wall_ms: r.wall_median_ms,
            line: String::new(),
        };
        let count = |x: Option<f64>| x.map_or("n/a".to_string(), fmt_count);
        let mib = |x: Option<f64>| x.map_or("n/a".to_string(), |m| format!("{m:.1} MiB"));
        v.line = match (failed, c) {
            (Some(e), _) => format!("{}: failed: {e}", r.allocator),
            (None, None) => format!("{}: no paired rounds with {defaults}", r.allocator),
            (None, Some(c)) => {
                let call = match c.verdict {
                    Some(crate::analysis::stats::Verdict::Faster) => "helps: ",
                    Some(crate::analysis::stats::Verdict::Slower) => "costs time: ",
                    _ => "",
                };
                let instead = if is_builtin(&r.allocator) {
                    String::new()
                } else {
                    "instead of glibc, ".to_string()
                };
                let decided = matches!(
                    c.verdict,
                    Some(
                        crate::analysis::stats::Verdict::Faster
                            | crate::analysis::stats::Verdict::Slower
                    )
                );
                let why = command::why_against(r, base, (c.ratio, decided))
                    .map(|w| format!("; why: {}", w.text))
                    .unwrap_or_default();
                format!(
                    "{}: {instead}{call}{} against {defaults}'s defaults, per run; {} faults and {} memory syscalls per run (defaults: {} and {}); peak RSS {} vs {}{why}",
                    r.allocator,
                    describe(&c),
                    count(v.figures.set[RUN_MINOR_FAULTS]),
                    count(v.figures.set.memory_calls()),
                    count(v.figures.defaults[RUN_MINOR_FAULTS]),
                    count(v.figures.defaults.memory_calls()),
                    mib(v.figures.set[RUN_PEAK_RSS]),
                    mib(v.figures.defaults[RUN_PEAK_RSS]),
                )
            }
        };
        out.push(v);
    }
    out
}

/// The one recommendation: of the sets significantly faster than their allocator's
/// defaults, the one whose runs are fastest, with its interval and memory price; or that
/// nothing helps significantly.
pub fn recommendation(verdicts: &[SetVerdict], threshold: f64, level: f64) -> String {
    let best = verdicts
        .iter()
        .filter(|v| v.verdict.as_deref() == Some(crate::analysis::stats::Verdict::Faster.words()))
        .filter_map(|v| Some((v, v.ratio?, v.wall_ms?)))
        .min_by(|a, b| a.2.total_cmp(&b.2));
    match best {
        Some((v, ratio, wall)) => {
            let rss = match (
                v.figures.set[RUN_PEAK_RSS],
                v.figures.defaults[RUN_PEAK_RSS],
            ) {
                (Some(x), Some(b)) if (x - b).abs() < 0.05 => {
                    format!("peak RSS {x:.1} MiB, as with the defaults")
                }
                (Some(x), Some(b)) => format!(
                    "peak RSS {x:.1} MiB against {b:.1} MiB ({}{:.1} MiB)",
                    if x >= b { "+" } else { "−" },
                    (x - b).abs()
                ),
                _ => "peak RSS not measured".into(),
            };
            format!(
                "recommended: {} — the fastest of the sets that help ({} per run): {:.2}x faster than {}'s defaults [{:.2}x, {:.2}x]; {rss}",
                v.set,
                fmt_ns(wall * 1e6),
                1.0 / ratio,
                v.against,
                1.0 / v.ci_high.unwrap_or(ratio),
                1.0 / v.ci_low.unwrap_or(ratio),
            )
        }
        None => format!(
            "recommended: nothing — no knob set is faster than its allocator's defaults beyond ±{} % with {} confidence",
            threshold * 100.0,
            crate::analysis::stats::level_text(level)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curated_sets_parse_and_start_with_the_defaults() {
        for a in Allocator::ALL {
            let s = specs(*a);
            assert!(s[0].knobs.is_empty());
            // Allocators with knobs of their own have sets to try; the others run their
            // defaults (the lab's own knob acts at an idle phase, which tune has not).
            if crate::model::knobs::defs(*a)
                .iter()
                .all(|d| crate::model::knobs::is_lab_knob(d.name))
            {
                assert_eq!(s.len(), 1, "{a}");
            } else {
                assert!(s.len() >= 4, "{a}");
            }
        }
    }

    fn set(name: &str, verdict: &str, ratio: f64, wall_ms: f64) -> SetVerdict {
        SetVerdict {
            set: name.into(),
            against: "system".into(),
            ratio: Some(ratio),
            ci_low: Some(ratio * 0.9),
            ci_high: Some(ratio * 1.1),
            verdict: Some(verdict.into()),
            figures: {
                let mut f = AgainstDefaults::default();
                f.set[RUN_PEAK_RSS] = Some(70.0);
                f.defaults[RUN_PEAK_RSS] = Some(60.0);
                f
            },
            wall_ms: Some(wall_ms),
            line: String::new(),
        }
    }

    #[test]
    fn the_recommendation_is_the_fastest_set_that_helps_with_its_memory_price() {
        use crate::analysis::stats::Verdict;
        let faster = Verdict::Faster.words();
        let sets = [
            // Helps most against its own (slow) defaults, but its runs are slower.
            set("jemalloc:dirty_decay_ms=-1", faster, 0.25, 500.0),
            set("system:top_pad=64M", faster, 0.4, 450.0),
            // Fastest of all, but not significantly faster than its defaults.
            set(
                "mimalloc:purge_delay=-1",
                Verdict::NoSignificantDifference.words(),
                0.9,
                400.0,
            ),
        ];
        let r = recommendation(&sets, 0.02, crate::analysis::stats::DEFAULT_LEVEL);
        assert!(r.starts_with("recommended: system:top_pad=64M"), "{r}");
        assert!(
            r.contains("2.50x faster") && r.contains("(+10.0 MiB)"),
            "{r}"
        );
        let none = recommendation(&sets[2..], 0.02, crate::analysis::stats::DEFAULT_LEVEL);
        assert!(none.starts_with("recommended: nothing"), "{none}");
    }
}
