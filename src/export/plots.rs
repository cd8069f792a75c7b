//! The lab's plots, drawn from summary rows and run records: latency percentile curves,
//! median time, throughput, faults and memory syscalls against size (or threads). One
//! colour per allocator and one dash pattern per variant in every plot.

use crate::export::hdr;
use crate::export::svg::{render, Axis, Chart, Scale, Series};
use crate::fmt::fmt_ns;
use crate::fmt::{fmt_elems, fmt_plain, trim_float};
use crate::model::metric::{MEMORY_SYSCALLS, MINOR_FAULTS};
use crate::model::record::Outcome;
use crate::model::spec::{Allocator, Choice, Variant, Workload};
use crate::model::summary::SummaryRow;
use std::collections::{BTreeMap, BTreeSet};

/// A plot ready to be written to `plots/<name>.svg`.
pub struct PlotFile {
    pub name: String,
    pub title: String,
    pub svg: String,
}

/// Twenty distinct colours (matplotlib's tab20, strong and light alternating), for plots
/// of one allocator's many knob sets.
const MANY: [&str; 20] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
    "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
];

/// Whether a row's label names an installed library (run by the system worker, labelled
/// with the library's name) rather than glibc itself.
fn is_library(a: Allocator, label: &str) -> bool {
    a == Allocator::System && label.split([':', ' ']).next() != Some(a.name())
}

/// The colour of a spec label: its allocator's palette (greys for installed libraries);
/// further specs of the same allocator (other knobs) get darker and lighter shades of
/// it, in order. The six allocators' first colours are Okabe and Ito's colour-blind-safe
/// set (blue, vermillion, bluish green, sky blue, orange, reddish purple), and no shade
/// is so pale that it fades on white. snmalloc's shades stay golden, apart from
/// jemalloc's reds (its dark browns once read as jemalloc's dark red).
pub fn color(a: Allocator, label: &str, shade: usize) -> &'static str {
    const LIBRARY: [&str; 8] = [
        "#252525", "#737373", "#000000", "#969696", "#525252", "#bdbdbd", "#3b3b3b", "#636363",
    ];
    if is_library(a, label) {
        return LIBRARY[shade % LIBRARY.len()];
    }
    const SYSTEM: [&str; 8] = [
        "#0072b2", "#08306b", "#6baed6", "#17becf", "#3f51b5", "#4292c6", "#2171b5", "#5e3c99",
    ];
    const JEMALLOC: [&str; 8] = [
        "#d55e00", "#67000d", "#e34a33", "#ff7f0e", "#a50f15", "#ef3b2c", "#fb6a4a", "#cb181d",
    ];
    const MIMALLOC: [&str; 8] = [
        "#009e73", "#00441b", "#41ab5d", "#bcbd22", "#238b45", "#4d9221", "#006d2c", "#7f7f00",
    ];
    const TCMALLOC: [&str; 8] = [
        "#56b4e9", "#3f007d", "#762a83", "#6a51a3", "#54278f", "#8856a7", "#807dba", "#4a1486",
    ];
    const SNMALLOC: [&str; 8] = [
        "#e69f00", "#9c7a00", "#b8860b", "#daa520", "#806600", "#cc9900", "#f0b400", "#a67c00",
    ];
    const RPMALLOC: [&str; 8] = [
        "#cc79a7", "#7a0177", "#f768a1", "#ce1256", "#980043", "#c51b7d", "#dd3497", "#ae017e",
    ];
    let palette = match a {
        Allocator::System => SYSTEM,
        Allocator::Jemalloc => JEMALLOC,
        Allocator::Mimalloc => MIMALLOC,
        Allocator::Tcmalloc => TCMALLOC,
        Allocator::Snmalloc => SNMALLOC,
        Allocator::Rpmalloc => RPMALLOC,
    };
    palette[shade % palette.len()]
}

/// The shade index of each allocator spec label: its rank among the labels of the same
/// allocator, in sorted order.
fn shades<'a>(labels: impl Iterator<Item = (Allocator, &'a str)>) -> BTreeMap<String, usize> {
    // Installed libraries (None) share the grey palette.
    let mut seen: BTreeMap<Option<Allocator>, BTreeSet<&str>> = BTreeMap::new();
    for (a, l) in labels {
        seen.entry((!is_library(a, l)).then_some(a))
            .or_default()
            .insert(l);
    }
    seen.values()
        .flat_map(|ls| ls.iter().enumerate().map(|(i, l)| (l.to_string(), i)))
        .collect()
}

pub fn dash(v: Variant) -> Option<&'static str> {
    match v {
        Variant::InPlace => None,
        // Round caps lengthen each dash by the line width: these are the patterns as
        // drawn with them (round dots for reuse, which thin square dots hid).
        Variant::OutOfPlace => Some("7,5"),
        Variant::Reuse => Some("0.5,4.5"),
        Variant::Fused => Some("11,4.5,0.5,4.5"),
    }
}

pub use crate::model::experiment::sizes_of_interest;

/// A line of a plot: allocator, its spec label, variant.
type SeriesKey<'a> = (Allocator, &'a str, Variant);

/// One line per allocator × variant of `rows` (ok runs only), x and y from the row.
fn series_by_run(
    rows: &[&SummaryRow],
    x: impl Fn(&SummaryRow) -> f64,
    y: impl Fn(&SummaryRow) -> Option<f64>,
) -> Vec<Series> {
    let mut lines: BTreeMap<SeriesKey, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status.is_ok()) {
        if let Some(v) = y(r) {
            lines
                .entry((r.allocator, r.allocator_spec.as_str(), r.variant))
                .or_default()
                .push((x(r), v));
        }
    }
    let shade = shades(lines.keys().map(|k| (k.0, k.1)));
    // Installed libraries after the built-in allocators in the legend.
    let mut lines: Vec<_> = lines.into_iter().collect();
    lines.sort_by_key(|((a, label, _), _)| is_library(*a, label));
    lines
        .into_iter()
        .map(|((a, label, v), mut points)| {
            points.sort_by(|p, q| p.0.total_cmp(&q.0));
            Series {
                label: format!("{label} {v}"),
                color: color(a, label, shade.get(label).copied().unwrap_or(0)),
                dash: dash(v),
                points,
            }
        })
        .collect()
}

/// Every plot for one experiment's rows and records.
pub fn plots(rows: &[SummaryRow], outcomes: &[Outcome]) -> Vec<PlotFile> {
    let mut files = Vec::new();
    let workloads: BTreeSet<Workload> = rows.iter().map(|r| r.workload).collect();
    for w in workloads {
        let rows_w: Vec<&SummaryRow> = rows.iter().filter(|r| r.workload == w).collect();
        let threads: BTreeSet<u32> = rows_w.iter().map(|r| r.threads).collect();
        let sizes: BTreeSet<u64> = rows_w.iter().map(|r| r.size).collect();
        // Against size, one set per thread count.
        if sizes.len() > 1 {
            for &t in &threads {
                let rs: Vec<&SummaryRow> =
                    rows_w.iter().copied().filter(|r| r.threads == t).collect();
                let x_axis = || Axis {
                    label: "size (elements, log scale)".into(),
                    scale: Scale::Log,
                    format: fmt_elems,
                };
                let x = |r: &SummaryRow| r.size as f64;
                files.extend(versus(
                    &format!("{w}-t{t}-size"),
                    &format!("{w}, {}", crate::fmt::Threads(t)),
                    &rs,
                    x_axis,
                    x,
                ));
            }
        }
        // Against threads, one set per size.
        if threads.len() > 1 {
            for &n in &sizes {
                let rs: Vec<&SummaryRow> = rows_w.iter().copied().filter(|r| r.size == n).collect();
                let x_axis = || Axis {
                    label: "threads".into(),
                    scale: Scale::Whole,
                    format: trim_float,
                };
                let x = |r: &SummaryRow| f64::from(r.threads);
                files.extend(versus(
                    &format!("{w}-n{n}-threads"),
                    &format!("{w}, {} elements", fmt_elems(n as f64)),
                    &rs,
                    x_axis,
                    x,
                ));
            }
        }
        // Percentile curves at the sizes of interest, for each thread count; one plot per
        // allocator when there are too many lines for one.
        for n in sizes_of_interest(&sizes) {
            for &t in &threads {
                let here: Vec<&Outcome> = outcomes
                    .iter()
                    .filter(|o| o.spec.workload == w && o.spec.size == n && o.spec.threads == t)
                    .collect();
                let groups: Vec<(String, Vec<&Outcome>)> = if here.len() > MAX_LINES {
                    Allocator::ALL
                        .iter()
                        .map(|a| {
                            (
                                format!("-{a}"),
                                here.iter()
                                    .copied()
                                    .filter(|o| o.spec.allocator == *a)
                                    .collect(),
                            )
                        })
                        .collect()
                } else {
                    vec![(String::new(), here)]
                };
                for (suffix, group) in groups {
                    if let Some(p) = percentile_plot(w, n, t, &suffix, &group) {
                        files.push(p);
                    }
                }
            }
        }
    }
    files
}

/// Most lines in one percentile plot before it is split by allocator.
const MAX_LINES: usize = 24;

fn percentile_plot(
    w: Workload,
    n: u64,
    t: u32,
    suffix: &str,
    outcomes: &[&Outcome],
) -> Option<PlotFile> {
    let labels: Vec<(Allocator, String)> = outcomes
        .iter()
        .map(|o| (o.spec.allocator, o.spec.allocator_label()))
        .collect();
    let shade = shades(labels.iter().map(|(a, l)| (*a, l.as_str())));
    let mut series = Vec::new();
    for o in outcomes {
        let s = &o.spec;
        let Ok(rec) = &o.result else { continue };
        let Ok(h) = rec.histogram.decode() else {
            continue;
        };
        let points = hdr::rows(&h, 1.0)
            .into_iter()
            .filter(|r| r.quantile < 1.0)
            .map(|r| (1.0 / (1.0 - r.quantile), r.value))
            .collect();
        let shade = shade.get(&s.allocator_label()).copied().unwrap_or(0);
        series.push(Series {
            label: format!("{} {}", s.allocator_label(), s.variant),
            // A plot of one allocator's many knob sets: its 8 shades would repeat, so
            // each set gets one of 20 distinct colours instead.
            color: if suffix.is_empty() {
                color(s.allocator, &s.allocator_label(), shade)
            } else {
                MANY[shade % MANY.len()]
            },
            dash: dash(s.variant),
            points,
        });
    }
    if series.is_empty() {
        return None;
    }
    // One plot per allocator when split: its title says which (and leaves out the
    // buffer size, to fit).
    let title = match suffix.strip_prefix('-') {
        Some(a) => format!(
            "Latency percentiles: {w}, {} elements, {} — {a} and its knob sets",
            fmt_elems(n as f64),
            crate::fmt::Threads(t)
        ),
        None => format!(
            "Latency percentiles: {w}, {}, {}",
            w.size_heading(n),
            crate::fmt::Threads(t)
        ),
    };
    Some(PlotFile {
        name: format!("{w}-n{n}-t{t}-latency{suffix}"),
        svg: render(&Chart {
            title: title.clone(),
            x: Axis {
                label: "percentile, as 1/(1-p): 2 = p50, 10 = p90, 100 = p99 (log scale)".into(),
                scale: Scale::Log,
                format: fmt_plain,
            },
            // Log: a fault storm's curves sit 10–20x above the others, which a linear
            // axis would flatten onto zero.
            y: Axis {
                label: "latency per iteration (log scale)".into(),
                scale: Scale::Log,
                format: |v| fmt_ns(v),
            },
            series,
        }),
        title,
    })
}

/// A plot against one x: file suffix, title, y axis and the value plotted.
type Metric = (&'static str, String, Axis, fn(&SummaryRow) -> Option<f64>);

/// Counts per iteration at or below this are drawn on the bottom line of the fault and
/// syscall plots: one event in 100 iterations is start-up, not a pattern.
const FLOOR_PER_ITER: f64 = 0.01;

/// The four plots against one x: median time, throughput, faults, memory syscalls.
fn versus(
    name: &str,
    what: &str,
    rows: &[&SummaryRow],
    x_axis: impl Fn() -> Axis,
    x: impl Fn(&SummaryRow) -> f64 + Copy,
) -> Vec<PlotFile> {
    let specs: [Metric; 4] = [
        (
            "median",
            format!("Median time per iteration: {what}"),
            Axis {
                label: "p50 latency per iteration (log scale)".into(),
                scale: Scale::Log,
                format: |v| fmt_ns(v),
            },
            |r| r.p50_ns.map(|v| v as f64),
        ),
        (
            "throughput",
            format!("Throughput at the median: {what}"),
            Axis {
                label: "GB/s (inputs read + result written, at p50)".into(),
                scale: Scale::Linear,
                format: trim_float,
            },
            |r| r.throughput_gb_per_s,
        ),
        (
            "faults",
            format!("Minor page faults per iteration: {what}"),
            Axis {
                label: "minor faults per iteration (log scale)".into(),
                scale: Scale::LogFloor(FLOOR_PER_ITER),
                format: fmt_plain,
            },
            |r| r.per_iter[MINOR_FAULTS],
        ),
        (
            "syscalls",
            format!("Memory syscalls per iteration: {what}"),
            Axis {
                label: "brk + mmap + munmap + madvise + mremap per iteration (log scale)".into(),
                scale: Scale::LogFloor(FLOOR_PER_ITER),
                format: fmt_plain,
            },
            |r| r.per_iter[MEMORY_SYSCALLS],
        ),
    ];
    specs
        .into_iter()
        .filter_map(|(suffix, title, y, get)| {
            let series = series_by_run(rows, x, get);
            if series.is_empty() {
                return None;
            }
            Some(PlotFile {
                name: format!("{name}-{suffix}"),
                svg: render(&Chart {
                    title: title.clone(),
                    x: x_axis(),
                    y,
                    series,
                }),
                title,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_of_interest_pick_near_1e3_1e6_and_the_largest() {
        let s: BTreeSet<u64> = [32, 1024, 30_000, 1_048_576, 100_000_000].into();
        assert_eq!(sizes_of_interest(&s), vec![1024, 1_048_576, 100_000_000]);
        let few: BTreeSet<u64> = [5, 7].into();
        assert_eq!(sizes_of_interest(&few), vec![5, 7]);
    }

    #[test]
    fn element_labels_are_short() {
        assert_eq!(fmt_elems(1e6), "1M");
        assert_eq!(fmt_elems(32.0), "32");
        assert_eq!(fmt_elems(1.5e4), "15k");
        assert_eq!(fmt_plain(0.001), "1e-3");
        assert_eq!(fmt_plain(0.05), "0.05");
        assert_eq!(fmt_plain(2e5), "200k");
    }
}
