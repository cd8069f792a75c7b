//! Cells measured in several processes: one summary row per cell (medians over the
//! processes, intervals, count ranges) and the paired comparisons between cells.

use crate::analysis::stats::{compare_paired, median, median_ci, Comparison};
#[cfg(test)]
use crate::model::metric::MINOR_FAULTS;
use crate::model::metric::{Figures, COUNTS, MEMORY_SYSCALLS, METRICS};
use crate::model::record::{Cell, Outcome, RunFailure, RunRecord};
use crate::model::summary::SummaryRow;
use std::collections::BTreeMap;

/// The p50 of the processes' samples pooled into one histogram (None when a histogram
/// does not decode or merge).
fn pooled_p50(records: &[&RunRecord]) -> Option<u64> {
    let mut pooled = records.first()?.histogram.decode().ok()?;
    for r in &records[1..] {
        pooled.add(r.histogram.decode().ok()?).ok()?;
    }
    Some(crate::model::percentiles::value_at(&pooled, 50.0))
}

/// The (lower) median of a figure where a process without it ranks last (a time until
/// something that never happened): None where half the processes or more lack it.
fn never_is_last_median(
    records: &[&RunRecord],
    get: &dyn Fn(&RunRecord) -> Option<f64>,
) -> Option<f64> {
    let mut v: Vec<f64> = records
        .iter()
        .map(|r| get(r).unwrap_or(f64::INFINITY))
        .collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2)
        .copied()
        .filter(|x| x.is_finite())
}

/// The row of a cell measured in several processes: medians over the processes, with
/// the interval of the p50 and p99 medians and the min–max of the counts. A cell with a
/// failed process is a failed row that says how many failed and why.
pub fn row(cell: &Cell) -> SummaryRow {
    let records: Vec<&RunRecord> = cell.records().map(|(_, r)| r).collect();
    let failures: Vec<&RunFailure> = cell
        .runs
        .iter()
        .filter_map(|(_, r)| r.as_ref().err())
        .collect();
    if let Some(first) = failures.first() {
        let cause = match cell.runs.len() {
            1 => first.cause.clone(),
            n => format!(
                "{} of {n} processes failed: {}",
                failures.len(),
                first.cause
            ),
        };
        return SummaryRow::from_outcome(&Outcome {
            spec: cell.spec.clone(),
            result: Err(RunFailure { cause }),
        });
    }
    let Some(first) = records.first() else {
        return SummaryRow::from_outcome(&Outcome {
            spec: cell.spec.clone(),
            result: Err(RunFailure {
                cause: "not run".into(),
            }),
        });
    };
    let mut row = SummaryRow::from_outcome(&Outcome {
        spec: cell.spec.clone(),
        result: Ok((*first).clone()),
    });
    if records.len() == 1 {
        return row;
    }
    let values = |get: &dyn Fn(&RunRecord) -> Option<f64>| -> Vec<f64> {
        records.iter().filter_map(|r| get(r)).collect()
    };
    let med = |get: &dyn Fn(&RunRecord) -> Option<f64>| -> Option<f64> { median(&values(get)) };
    let range = |get: &dyn Fn(&RunRecord) -> Option<f64>| {
        let v = values(get);
        let min = v.iter().copied().reduce(f64::min);
        let max = v.iter().copied().reduce(f64::max);
        (min, max)
    };
    let round = |v: Option<f64>| v.map(|v| v.round() as u64);
    let p50s = values(&|r| Some(r.p50_ns as f64));
    let p99s = values(&|r| Some(r.p99_ns as f64));
    row.processes = Some(records.len() as u32);
    row.pooled_p50_ns = pooled_p50(&records);
    row.process_p50_ns = Some(records.iter().map(|r| r.p50_ns).collect());
    row.iterations = Some(records.iter().map(|r| r.iterations).sum());
    row.min_ns = records.iter().map(|r| r.min_ns).min();
    row.max_ns = records.iter().map(|r| r.max_ns).max();
    row.p50_ns = round(median(&p50s));
    row.p90_ns = round(med(&|r| Some(r.p90_ns as f64)));
    row.p99_ns = round(median(&p99s));
    row.p999_ns = round(med(&|r| Some(r.p999_ns as f64)));
    row.mean_ns = med(&|r| Some(r.mean_ns));
    row.throughput_gb_per_s = row.p50_ns.map(|p50| {
        cell.spec.workload.useful_bytes(cell.spec.size) as f64 * f64::from(cell.spec.threads)
            / p50.max(1) as f64
    });
    if let Some(ci) = median_ci(&p50s, cell.level) {
        row.p50_ci_low_ns = round(Some(ci.low));
        row.p50_ci_high_ns = round(Some(ci.high));
        row.ci_coverage = Some(ci.coverage);
    }
    if let Some(ci) = median_ci(&p99s, cell.level) {
        row.p99_ci_low_ns = round(Some(ci.low));
        row.p99_ci_high_ns = round(Some(ci.high));
    }
    let counter = row.per_iter.syscall_counter.take();
    row.per_iter = Figures::each(|m| med(&|r| r.per_iter[m])).counted_by(counter);
    for m in METRICS.iter().filter(|m| m.spread) {
        (row.spread.min[*m], row.spread.max[*m]) = range(&|r| r.per_iter[*m]);
    }
    row.rss_start_bytes = round(med(&|r| r.rss_start_bytes.map(|v| v as f64)));
    row.rss_end_bytes = round(med(&|r| r.rss_end_bytes.map(|v| v as f64)));
    row.rss_peak_bytes = round(med(&|r| Some(r.rss_peak_bytes as f64)));
    for m in crate::model::metric::MEMORY_METRICS
        .iter()
        .filter(|m| m.spread)
    {
        if let Some(ci) = median_ci(&values(&|r| r.memory[*m]), cell.level) {
            row.memory_ci.low[*m] = Some(ci.low);
            row.memory_ci.high[*m] = Some(ci.high);
        }
    }
    row.memory = crate::model::metric::MemoryFigures::each(|m| {
        if m.index == crate::model::metric::HALF_RETURNED.index {
            never_is_last_median(&records, &|r| r.memory[m])
        } else {
            med(&|r| r.memory[m])
        }
    });
    use crate::analysis::modes::{behaviours, Unit};
    let all = |get: &dyn Fn(&RunRecord) -> Option<f64>| {
        let v = values(get);
        // A figure only where every process has it.
        if v.len() == records.len() {
            v
        } else {
            Vec::new()
        }
    };
    let labels = COUNTS.map(|m| m.per_label());
    let mut figures = vec![("p50", Unit::Ns, p50s.clone())];
    for (m, label) in COUNTS.iter().zip(&labels) {
        figures.push((label, Unit::Count, all(&|r| r.per_iter[*m])));
    }
    row.behaviours = behaviours(&figures);
    row
}

/// How a sentence tells two cells apart: by variant where the allocator is the same, by
/// allocator where the variant is, else by both.
pub fn names(a: &Cell, b: &Cell) -> (String, String) {
    let (la, lb) = (a.spec.allocator_label(), b.spec.allocator_label());
    if la == lb {
        (a.spec.variant.to_string(), b.spec.variant.to_string())
    } else if a.spec.variant == b.spec.variant {
        (la, lb)
    } else {
        (
            format!("{la} {}", a.spec.variant),
            format!("{lb} {}", b.spec.variant),
        )
    }
}

/// Why cell `subject` (named `subject_name` in the sentence) differs from `base` (named
/// `base_name`), compared as `cmp`: the one cause composer
/// ([`crate::analysis::mechanism::why_of`]) over their rows' counts per iteration and
/// their evidence.
pub fn why(
    (subject, subject_name): (&Cell, &str),
    (base, base_name): (&Cell, &str),
    cmp: &Comparison,
) -> crate::analysis::mechanism::Why {
    use crate::analysis::mechanism::{why_of, Counts, Side};
    fn side<'a>(c: &'a Cell, name: &'a str) -> Side<'a> {
        Side {
            name,
            counts: Counts::of_row(&row(c)),
            evidence: c.evidence.as_ref(),
        }
    }
    let decided = matches!(
        cmp.verdict,
        Some(crate::analysis::stats::Verdict::Slower | crate::analysis::stats::Verdict::Faster)
    );
    why_of(
        side(subject, subject_name),
        side(base, base_name),
        (cmp.ratio, decided),
        crate::model::evidence::Per::Iteration,
    )
}

/// `other` against `base` from the rounds in which both produced a record: the ratio of
/// their p50s per round, its median, interval and verdict against `threshold`.
pub fn compare(base: &Cell, other: &Cell, threshold: f64) -> Option<Comparison> {
    compare_by(base, other, threshold, |r| r.p50_ns as f64)
}

/// [`compare`] of another figure of each process (a service's p99, say).
pub fn compare_by(
    base: &Cell,
    other: &Cell,
    threshold: f64,
    figure: impl Fn(&RunRecord) -> f64,
) -> Option<Comparison> {
    let base_by_round: BTreeMap<u32, f64> = base
        .records()
        .map(|(round, r)| (round, figure(r)))
        .collect();
    let pairs: Vec<(f64, f64)> = other
        .records()
        .filter_map(|(round, r)| Some((*base_by_round.get(&round)?, figure(r))))
        .collect();
    compare_paired(&pairs, threshold, base.level)
}

/// How far a session's own halves put a printed comparison: the ratio of `other` to
/// `base` over the earlier half of their paired rounds against the later half (each a
/// median of the per-round ratios), as |log| of their quotient; the comparison that
/// moved most with its two ratios. Drift the session shows between its halves is drift a
/// second run may show too (docs/method.md measures how often the next run falls inside
/// this run's interval). None below 4 paired rounds.
pub struct Halves {
    pub base: usize,
    pub other: usize,
    pub early: f64,
    pub late: f64,
}

impl Halves {
    /// The move between the halves, as a fraction of the smaller ratio (0.31 = 31 %).
    pub fn apart(&self) -> f64 {
        self.early.max(self.late) / self.early.min(self.late) - 1.0
    }
}

/// Every printed comparison's [`Halves`], in the order of the printed comparisons.
pub fn halves(cells: &[Cell]) -> Vec<Halves> {
    let rows: Vec<SummaryRow> = cells.iter().map(row).collect();
    crate::analysis::pairs::printed_comparisons(&rows)
        .into_iter()
        .filter_map(|(b, o)| {
            let base: BTreeMap<u32, f64> = cells[b]
                .records()
                .map(|(round, r)| (round, r.p50_ns as f64))
                .collect();
            let mut ratios: Vec<(u32, f64)> = cells[o]
                .records()
                .filter_map(|(round, r)| {
                    let v = *base.get(&round)?;
                    (v > 0.0).then(|| (round, r.p50_ns as f64 / v))
                })
                .collect();
            if ratios.len() < 4 {
                return None;
            }
            ratios.sort_by_key(|(round, _)| *round);
            let v: Vec<f64> = ratios.into_iter().map(|(_, r)| r).collect();
            let (early, late) = v.split_at(v.len() / 2);
            Some(Halves {
                base: b,
                other: o,
                early: median(early)?,
                late: median(late)?,
            })
        })
        .collect()
}

/// Fills each row's ratio to its allocator's in-place row, from paired rounds (`cells`
/// and `rows` in the same order): the ratio wherever one pair was measured, its interval
/// from two, its verdict words (`undecided` below the confidence level).
pub fn set_in_place_ratios(cells: &[&Cell], rows: &mut [SummaryRow], threshold: f64) {
    for i in 0..rows.len() {
        let base = (0..rows.len()).find(|&j| {
            rows[j].variant == crate::model::spec::Variant::InPlace
                && rows[j].allocator_spec == rows[i].allocator_spec
                && rows[j].size == rows[i].size
                && rows[j].status.is_ok()
        });
        let Some(base) = base.filter(|&j| j != i && rows[i].status.is_ok()) else {
            continue;
        };
        if let Some(c) = compare(cells[base], cells[i], threshold) {
            let r = &mut rows[i];
            r.vs_in_place = Some(c.ratio);
            r.vs_in_place_ci_low = c.interval.map(|ci| ci.low);
            r.vs_in_place_ci_high = c.interval.map(|ci| ci.high);
            r.vs_in_place_verdict = c.verdict.map(|v| v.words().to_string());
        }
    }
}

/// Whether a comparison still wants rounds: no interval at the level yet, an interval
/// that straddles an edge of the ±`threshold` band (neither wholly beyond it nor wholly
/// inside it), or — with `precision` — one wider than ±precision of its ratio.
pub fn is_open(c: &Comparison, threshold: f64, precision: Option<f64>) -> bool {
    let Some(ci) = c.interval else { return true };
    if ci.coverage < c.level - 1e-12 {
        return true;
    }
    let beyond = ci.low > 1.0 + threshold || ci.high < 1.0 - threshold;
    let inside = ci.low >= 1.0 - threshold && ci.high <= 1.0 + threshold;
    let wide =
        precision.is_some_and(|p| crate::analysis::stats::half_width_pct(c.ratio, ci) / 100.0 > p);
    !(beyond || inside) || wide
}

/// The printed comparisons of `cells` (see [`crate::analysis::pairs::printed_comparisons`])
/// that are still open, as (base, other) cell indices; the cells that take part in them
/// are the ones another adaptive round runs.
pub fn open_comparisons(
    cells: &[Cell],
    threshold: f64,
    precision: Option<f64>,
) -> (Vec<(usize, usize)>, usize) {
    let rows: Vec<SummaryRow> = cells.iter().map(row).collect();
    let printed = crate::analysis::pairs::printed_comparisons(&rows);
    let total = printed.len();
    let open = printed
        .into_iter()
        .filter(|&(b, o)| {
            compare(&cells[b], &cells[o], threshold)
                .is_none_or(|c| is_open(&c, threshold, precision))
        })
        .collect();
    (open, total)
}

/// Cells whose processes disagree on a count that the workload fixes (memory syscalls
/// per iteration differ by more than one call between processes): one note each.
pub fn disagreements(rows: &[SummaryRow]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let (lo, hi) = (
                r.spread.min[MEMORY_SYSCALLS]?,
                r.spread.max[MEMORY_SYSCALLS]?,
            );
            (hi - lo > 1.0).then(|| {
                format!(
                    "{} {}: its processes disagree on memory syscalls per iteration ({lo:.2} to {hi:.2}); the placement or timing of a process changes what the allocator does",
                    r.allocator_spec, r.variant
                )
            })
        })
        .collect()
}

/// What says the machine was noisy during a run set: other processes running, a load
/// average above half the CPUs before the run set started (the lab's own single worker
/// adds about one by the end), or cells whose 95 % interval is wider than ±5 % of their
/// median. Empty when nothing does.
pub fn noise_notes(
    start: &crate::model::environment::Load,
    end: &crate::model::environment::Load,
    cpus: Option<u64>,
    rows: &[SummaryRow],
) -> Vec<String> {
    let mut notes = Vec::new();
    let others = [start.others_running, end.others_running];
    if others.iter().any(|o| o.is_some_and(|n| n > 0)) {
        notes.push(format!(
            "other processes were running: {} at the start, {} at the end (/proc/stat); they share the CPUs with the workers",
            others[0].map_or("?".into(), |n| n.to_string()),
            others[1].map_or("?".into(), |n| n.to_string())
        ));
    }
    if let (Some(load), Some(cpus)) = (start.loadavg_1m, cpus) {
        if load > 0.5 * cpus as f64 {
            notes.push(format!(
                "the load average was {load:.2} on {cpus} CPUs before the first run (and {} at the end)",
                end.loadavg_1m.map_or("?".into(), |l| format!("{l:.2}"))
            ));
        }
    }
    let wide: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let (c, lo, hi) = (r.p50_ns?, r.p50_ci_low_ns?, r.p50_ci_high_ns?);
            let half = hi.saturating_sub(c).max(c.saturating_sub(lo)) as f64 / c.max(1) as f64;
            (half > 0.05)
                .then(|| format!("{} {} ±{:.0} %", r.allocator_spec, r.variant, half * 100.0))
        })
        .collect();
    if !wide.is_empty() {
        notes.push(format!(
            "processes of the same cell spread by more than ±5 % in {} of {} cells ({}): verdicts there need a larger effect or more --processes",
            wide.len(),
            rows.len(),
            wide.join(", ")
        ));
    }
    notes
}

/// Processes whose measured phase was disturbed in a way their records show: a move to
/// another CPU (a migration, or a different CPU at its end), or time the hypervisor
/// stole from the machine. They are kept, and said: "3 of 96 processes …". None when no
/// process was, or no record read its conditions.
pub fn disturbed(cells: &[&Cell]) -> Option<String> {
    let conditions: Vec<&crate::model::conditions::Conditions> = cells
        .iter()
        .flat_map(|c| c.records().map(|(_, r)| r))
        .filter_map(|r| r.conditions.as_ref())
        .collect();
    let moved = conditions
        .iter()
        .filter(|c| c.migrations.is_some_and(|m| m > 0) || c.cpu_start != c.cpu_end)
        .count();
    let stolen = conditions
        .iter()
        .filter(|c| c.steal_ns.is_some_and(|s| s > 0))
        .count();
    (moved + stolen > 0).then(|| {
        format!(
            "of {} processes, {moved} moved to another CPU during their measured phase and {stolen} ran while the hypervisor stole time from the machine; all are kept (alloclab calibrate --noise tests whether either moves a p50 here)",
            conditions.len()
        )
    })
}

/// For tests: a cell of the founding case (scale, out-of-place, the stored record's size)
/// under `allocator` (a spec, with knobs), one process per figure with its p50 and
/// faults per iteration set.
/// Each distinct reason a counter was unavailable, once, with the runs it affected.
pub fn unavailable_notes(outcomes: &[Outcome]) -> Vec<String> {
    // One note per figure and reason: reasons that differ only in their numbers (a count
    // seen machine-wide, a size) are one reason, said with its first run's numbers.
    let shape = |why: &str| -> String {
        why.chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .collect()
    };
    let mut notes: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
    for o in outcomes {
        if let Ok(r) = &o.result {
            for (what, why) in &r.unavailable {
                notes
                    .entry((what.clone(), shape(why)))
                    .or_insert_with(|| (0, why.clone()))
                    .0 += 1;
            }
        }
    }
    notes
        .into_iter()
        .map(|((what, _), (n, why))| {
            format!(
                "{what} unavailable ({}): {why}",
                crate::fmt::counted(n, "run", "runs")
            )
        })
        .collect()
}

#[cfg(test)]
pub(crate) fn test_cell(allocator: &str, figures: &[(u64, f64)]) -> Cell {
    let record: RunRecord =
        serde_json::from_str(include_str!("../../tests/data/record.json")).unwrap();
    let alloc: crate::model::knobs::AllocatorSpec = allocator.parse().unwrap();
    let spec = crate::model::run::RunSpec {
        allocator: alloc.allocator,
        workload: crate::model::spec::Workload::Scale,
        variant: crate::model::spec::Variant::OutOfPlace,
        size: record.size,
        threads: 1,
        seed: 0,
        knobs: alloc.knobs,
        thp: Default::default(),
        library: None,
    };
    let runs = figures
        .iter()
        .enumerate()
        .map(|(i, &(p50, faults))| {
            let mut r = record.clone();
            (r.p50_ns, r.per_iter[MINOR_FAULTS]) = (p50, Some(faults));
            (i as u32, Ok(r))
        })
        .collect();
    Cell {
        spec,
        runs,
        level: crate::analysis::stats::DEFAULT_LEVEL,
        evidence: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::environment::Load;
    use crate::model::summary::sample;

    fn cell_of(figures: &[(u64, f64)]) -> Cell {
        test_cell("system", figures)
    }

    #[test]
    fn a_cell_whose_processes_fault_in_two_groups_says_two_behaviours_and_its_verdicts_say_so() {
        let two = cell_of(&[
            (1000, 176.0),
            (1010, 283.0),
            (1005, 176.5),
            (995, 282.0),
            (1002, 175.5),
            (1001, 283.5),
        ]);
        let r = row(&two);
        let figures: Vec<&str> = r.behaviours.iter().map(|b| b.figure.as_str()).collect();
        assert_eq!(
            figures,
            ["minor faults per iteration"],
            "{:?}",
            r.behaviours
        );
        assert_eq!(r.behaviours[0].groups[0].count, 3);
        let notes = crate::analysis::modes::behaviour_notes(&[r]);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains(
                "2 behaviours of minor faults per iteration: 176 in 3 processes, 283 in 3"
            ),
            "{notes:?}"
        );
        let one = cell_of(&[(1000, 200.0); 6]);
        assert!(row(&one).behaviours.is_empty());
    }

    #[test]
    fn an_unavailable_figure_is_one_note_whatever_numbers_its_reasons_carry() {
        let cell = cell_of(&[(100, 0.0); 3]);
        let outcomes: Vec<Outcome> = cell
            .runs
            .iter()
            .zip(["3", "7", "7"])
            .map(|((_, r), n)| {
                let mut r = r.clone().unwrap();
                r.unavailable.insert(
                    "huge_faults".into(),
                    format!("the count is machine-wide ({n} seen)"),
                );
                Outcome {
                    spec: cell.spec.clone(),
                    result: Ok(r),
                }
            })
            .collect();
        assert_eq!(
            unavailable_notes(&outcomes),
            ["huge_faults unavailable (3 runs): the count is machine-wide (3 seen)"]
        );
        assert_eq!(
            unavailable_notes(&outcomes[..1]),
            ["huge_faults unavailable (1 run): the count is machine-wide (3 seen)"]
        );
    }

    #[test]
    fn the_halves_of_a_session_say_how_far_its_ratio_moved() {
        // Out-of-place twice in-place in the earlier three rounds, three times in the
        // later three: the halves say 2.00x then 3.00x, 50 % apart.
        let mut base = cell_of(&[(100, 0.0); 6]);
        base.spec.variant = crate::model::spec::Variant::InPlace;
        let other = cell_of(&[
            (200, 0.0),
            (200, 0.0),
            (200, 0.0),
            (300, 0.0),
            (300, 0.0),
            (300, 0.0),
        ]);
        let h = halves(&[base.clone(), other]);
        assert_eq!(h.len(), 1);
        assert_eq!((h[0].base, h[0].other), (0, 1));
        assert_eq!((h[0].early, h[0].late), (2.0, 3.0));
        assert!((h[0].apart() - 0.5).abs() < 1e-12);
        // Three rounds are too few to split.
        let short = cell_of(&[(200, 0.0), (200, 0.0), (300, 0.0)]);
        assert!(halves(&[base, short]).is_empty());
    }

    #[test]
    fn a_quiet_machine_gets_no_note_and_a_busy_one_says_why() {
        let quiet = Load {
            loadavg_1m: Some(0.1),
            others_running: Some(0),
            governor: None,
        };
        let mut row = sample("system", "in-place", 1000, 0.0, None);
        (row.p50_ci_low_ns, row.p50_ci_high_ns) = (Some(990), Some(1010));
        assert!(noise_notes(&quiet, &quiet, Some(2), std::slice::from_ref(&row)).is_empty());

        let busy = Load {
            loadavg_1m: Some(1.7),
            others_running: Some(1),
            governor: None,
        };
        let notes = noise_notes(&busy, &quiet, Some(2), std::slice::from_ref(&row));
        // Disturbed processes are counted from their records' conditions.
        let mut cell = test_cell("system", &[(100, 0.0), (100, 0.0), (100, 0.0)]);
        assert_eq!(
            disturbed(&[&cell]),
            None,
            "the stored record has no conditions"
        );
        for (i, (_, r)) in cell.runs.iter_mut().enumerate() {
            let r = r.as_mut().unwrap();
            r.conditions = Some(crate::model::conditions::Conditions {
                cpu_start: Some(0),
                cpu_end: Some(if i == 1 { 1 } else { 0 }),
                migrations: Some(0),
                steal_ns: Some(if i == 2 { 10_000_000 } else { 0 }),
                ..Default::default()
            });
        }
        let said = disturbed(&[&cell]).unwrap();
        assert!(
            said.starts_with("of 3 processes, 1 moved to another CPU")
                && said.contains(" and 1 ran while"),
            "{said}"
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("1 at the start, 0 at the end"),
            "{notes:?}"
        );
        assert!(notes[1].contains("1.70 on 2 CPUs"), "{notes:?}");

        (row.p50_ci_low_ns, row.p50_ci_high_ns) = (Some(900), Some(1010));
        let notes = noise_notes(&quiet, &quiet, Some(2), &[row]);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("1 of 1 cells (system in-place ±10 %)"),
            "{notes:?}"
        );
    }
}
