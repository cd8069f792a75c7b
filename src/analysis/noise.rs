//! Where a cell's noise comes from (`alloclab calibrate --noise`): from long worker
//! processes that kept every iteration, the spread of a p50 *within* a process (windows
//! of one budget against the process's own long-run p50), *between* processes (each
//! process's p50 at that budget), and over the session (drift from the first processes
//! to the last); and from those, what a paired ratio's interval is expected to be with
//! the processes that fit into a given time at each budget.

use crate::analysis::stats::{half_width_pct, median, median_ci, SplitMix};
use serde::Serialize;

/// One long process: its iterations as (start since the first measured iteration,
/// latency), in order, and what the process cost around its measured phase.
#[derive(Clone, Debug)]
pub struct Series {
    pub samples: Vec<(u64, u64)>,
    /// Wall time of the whole process minus its measured phase (start, input, warm-up,
    /// exit), as the driver saw it.
    pub outside_ns: u64,
}

/// The noise at one per-process budget.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct AtBudget {
    pub budget_s: f64,
    /// Windows of this length in all processes (the within-process figure is over them).
    pub windows: usize,
    /// 95th percentile over windows of |window p50 / its process's p50 − 1|, in percent:
    /// how far one process's p50 at this budget strays from what the same process
    /// would say if it ran long. None with fewer than 2 windows.
    pub within_pct: Option<f64>,
    /// The processes' p50s over their first `budget_s` of measuring: half the range
    /// between the 10th and 90th percentile, over the median, in percent.
    pub between_pct: f64,
    /// What one process at this budget costs: its measured span (the budget, or its
    /// minimum iterations where they take longer), the warm-up, and what the processes
    /// spent outside measuring (median), in seconds.
    pub process_s: f64,
    /// Pairs of processes that fit into `per_seconds` at this budget.
    pub pairs: usize,
    /// With `pairs` paired processes drawn from these processes (an A/A comparison):
    /// the median half-width of the ratio's interval at the level in force, in percent.
    /// None when too few pairs give an interval at that level.
    pub ratio_pct: Option<f64>,
}

/// Two groups of processes whose p50s are apart by more than the within-process noise.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Modes {
    pub low_ns: f64,
    pub low_count: usize,
    pub high_ns: f64,
    pub high_count: usize,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Noise {
    pub processes: usize,
    pub budgets: Vec<AtBudget>,
    /// Per-process p50s over the whole measured phase, in the order the processes ran.
    pub process_p50_ns: Vec<f64>,
    pub modes: Option<Modes>,
    /// The median p50 of the later half of the processes over that of the earlier half,
    /// minus one, in percent (drift over the session).
    pub drift_pct: Option<f64>,
    /// The warm-up the budgets start after, in seconds (windows begin there).
    pub warmup_s: f64,
    /// (seconds, percent): each process's p50 over its first seconds without any
    /// warm-up against its own p50 after the warm-up (median over processes): what a
    /// shorter warm-up would do.
    pub first_seconds_pct: Vec<(f64, f64)>,
    /// The seconds the ratio figures assume.
    pub per_seconds: f64,
}

/// The `q` quantile of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// The p50 of the latencies of samples starting in [from, to).
fn p50_between(s: &[(u64, u64)], from: u64, to: u64) -> Option<f64> {
    let v: Vec<f64> = s
        .iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .map(|(_, l)| *l as f64)
        .collect();
    median(&v)
}

/// Median half-width (percent) of the interval of the median of `n` ratios a/b, a and b
/// drawn from `values` (an A/A comparison), over `reps` draws from `seed`.
fn expected_ratio_half_width(values: &[f64], n: usize, level: f64, reps: usize) -> Option<f64> {
    if values.len() < 2 || n < 2 {
        return None;
    }
    let mut rng = SplitMix(0x006e_6f69_7365 ^ n as u64);
    let mut widths = Vec::with_capacity(reps);
    for _ in 0..reps {
        let ratios: Vec<f64> = (0..n)
            .map(|_| {
                let a = values[(rng.next_u64() % values.len() as u64) as usize];
                let b = values[(rng.next_u64() % values.len() as u64) as usize];
                a / b
            })
            .collect();
        let center = median(&ratios)?;
        let ci = median_ci(&ratios, level)?;
        if ci.coverage < level - 1e-12 {
            return None;
        }
        widths.push(half_width_pct(center, ci));
    }
    median(&widths)
}

/// Splits sorted p50s at their widest relative gap when that gap is wider than `noise`
/// (a fraction) and each side holds at least two processes.
fn modes(p50s: &[f64], noise: f64) -> Option<Modes> {
    let s = sorted(p50s.to_vec());
    let (i, gap) = s
        .windows(2)
        .enumerate()
        .skip(1)
        .take(s.len().saturating_sub(3))
        .map(|(i, w)| (i + 1, w[1] / w[0] - 1.0))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if gap <= noise.max(0.01) {
        return None;
    }
    let (low, high) = s.split_at(i);
    Some(Modes {
        low_ns: median(low)?,
        low_count: low.len(),
        high_ns: median(high)?,
        high_count: high.len(),
    })
}

/// The noise of `series` (processes in the order they ran) at each of `budgets`
/// (seconds, each at most the processes' measured length; a window holds at least
/// `min_iters` iterations, as a worker's budget does), with ratio figures for
/// `per_seconds` of processes at the interval level `level`.
pub fn analyse(
    series: &[Series],
    warmup_s: f64,
    min_iters: usize,
    budgets: &[f64],
    per_seconds: f64,
    level: f64,
) -> Noise {
    let skip = (warmup_s * 1e9) as u64;
    let full: Vec<Option<f64>> = series
        .iter()
        .map(|s| p50_between(&s.samples, skip, u64::MAX))
        .collect();
    let outside = median(
        &series
            .iter()
            .map(|s| s.outside_ns as f64 / 1e9)
            .collect::<Vec<_>>(),
    )
    .unwrap_or(0.0);
    let at: Vec<AtBudget> = budgets
        .iter()
        .map(|&b| {
            // A window is what a process with this budget measures: at least `b` seconds
            // and at least `min_iters` iterations (the worker's rule).
            let mut devs = Vec::new();
            let mut firsts = Vec::new();
            let mut spans = Vec::new();
            for (s, whole) in series.iter().zip(&full) {
                let Some(whole) = whole else { continue };
                let kept: Vec<&(u64, u64)> = s.samples.iter().filter(|x| x.0 >= skip).collect();
                let mut i = 0;
                while i < kept.len() {
                    let t0 = kept[i].0;
                    let mut j = i;
                    while j < kept.len() && (j - i < min_iters || kept[j].0 < t0 + (b * 1e9) as u64)
                    {
                        j += 1;
                    }
                    let complete = j < kept.len();
                    if !complete && i > 0 {
                        break;
                    }
                    let lat: Vec<f64> = kept[i..j].iter().map(|x| x.1 as f64).collect();
                    if let Some(w) = median(&lat) {
                        if complete {
                            devs.push(100.0 * (w / whole - 1.0).abs());
                        }
                        if i == 0 {
                            firsts.push(w);
                            let last = kept[j - 1];
                            spans.push((last.0 + last.1 - t0) as f64 / 1e9);
                        }
                    }
                    i = j;
                }
            }
            let within = (devs.len() >= 2)
                .then(|| quantile(&sorted(devs.clone()), 0.95))
                .flatten();
            let s = sorted(firsts.clone());
            let between = match (quantile(&s, 0.1), quantile(&s, 0.9), median(&s)) {
                (Some(lo), Some(hi), Some(m)) if m > 0.0 => 50.0 * (hi - lo) / m,
                _ => 0.0,
            };
            let process_s = median(&spans).unwrap_or(b) + warmup_s + outside;
            let pairs = (per_seconds / (2.0 * process_s)).floor() as usize;
            AtBudget {
                budget_s: b,
                windows: devs.len(),
                within_pct: within,
                between_pct: between,
                process_s,
                pairs,
                ratio_pct: expected_ratio_half_width(&firsts, pairs, level, 400),
            }
        })
        .collect();
    let p50s: Vec<f64> = full.iter().flatten().copied().collect();
    let half = p50s.len() / 2;
    let drift = (half >= 2)
        .then(|| Some(100.0 * (median(&p50s[half..])? / median(&p50s[..half])? - 1.0)))
        .flatten();
    let first_seconds = [0.002, 0.005, 0.01, 0.02, 0.05]
        .into_iter()
        .filter_map(|t| {
            let m = median(
                &series
                    .iter()
                    .zip(&full)
                    .filter_map(|(s, whole)| {
                        let w = p50_between(&s.samples, 0, (t * 1e9) as u64)?;
                        Some(100.0 * (w / (*whole)? - 1.0))
                    })
                    .collect::<Vec<_>>(),
            )?;
            Some((t, m))
        })
        .collect();
    // Two modes count only when their gap is wider than a long window's own noise.
    let long_noise = at.iter().rev().find_map(|a| a.within_pct).unwrap_or(1.0) / 100.0;
    Noise {
        processes: series.len(),
        modes: modes(&p50s, 2.0 * long_noise),
        process_p50_ns: p50s,
        budgets: at,
        drift_pct: drift,
        warmup_s,
        first_seconds_pct: first_seconds,
        per_seconds,
    }
}

impl Noise {
    /// The shortest budget whose within-process spread is at most `pct` percent.
    pub fn stable_budget(&self, pct: f64) -> Option<&AtBudget> {
        self.budgets
            .iter()
            .find(|b| b.within_pct.is_some_and(|w| w <= pct))
    }

    /// The budget whose expected A/A ratio interval in `per_seconds` is narrowest.
    pub fn best_budget(&self) -> Option<&AtBudget> {
        self.budgets
            .iter()
            .filter(|b| b.ratio_pct.is_some())
            .min_by(|a, b| {
                let w = |x: &AtBudget| x.ratio_pct.unwrap_or(f64::INFINITY);
                w(a).total_cmp(&w(b))
            })
    }

    pub fn describe(&self, cell: &str) -> Vec<String> {
        let mut out = vec![format!(
            "noise of {cell}: {} processes, every iteration kept; a budget is the first seconds of a process's measuring after a warm-up of {} s",
            self.processes, self.warmup_s
        )];
        out.push(format!(
            "{:>8}  {:>8}  {:>14}  {:>15}  {:>10}  {:>6}  {:>14}",
            "budget",
            "windows",
            "within ±% p95",
            "between ±% p10-90",
            "process",
            "pairs",
            "A/A ratio ±%"
        ));
        for b in &self.budgets {
            out.push(format!(
                "{:>7}  {:>8}  {:>14}  {:>17}  {:>9.0}ms  {:>6}  {:>14}",
                format!("{} s", b.budget_s),
                b.windows,
                b.within_pct.map_or("-".into(), |w| format!("{w:.2}")),
                format!("{:.2}", b.between_pct),
                b.process_s * 1e3,
                b.pairs,
                b.ratio_pct.map_or("-".into(), |r| format!("{r:.2}"))
            ));
        }
        out.push(format!(
            "within: how far one process's p50 over a window of that length strays from the same process's p50 over its whole run (95th percentile over windows); between: the spread of the processes' p50s over their first window; process: the budget plus what a process costs outside measuring; pairs: paired processes that fit into {} s; A/A ratio: the median half-width of a ratio's interval from that many pairs of these processes",
            crate::fmt::trim_float(self.per_seconds)
        ));
        match self.stable_budget(1.0) {
            Some(b) => out.push(format!(
                "a process's own p50 is stable to ±1 % from {} s of measuring",
                b.budget_s
            )),
            None => out
                .push("no budget measured here keeps a process's own p50 within ±1 %".to_string()),
        }
        if let Some(m) = &self.modes {
            out.push(format!(
                "two modes between processes: {} near {:.0} µs, {} near {:.0} µs ({:+.1} %): a per-process effect that more processes average and longer ones do not",
                m.low_count,
                m.low_ns / 1e3,
                m.high_count,
                m.high_ns / 1e3,
                100.0 * (m.high_ns / m.low_ns - 1.0)
            ));
        }
        if let Some(d) = self.drift_pct {
            out.push(format!(
                "drift: the later half of the processes vs the earlier half {d:+.1} %"
            ));
        }
        if !self.first_seconds_pct.is_empty() {
            let parts: Vec<String> = self
                .first_seconds_pct
                .iter()
                .map(|(t, p)| format!("first {t} s {p:+.1} %"))
                .collect();
            out.push(format!(
                "warm-up: a process's p50 over its first seconds with no warm-up, against its own p50 after {} s (median over processes): {}",
                self.warmup_s,
                parts.join(", ")
            ));
        }
        if let Some(b) = self.best_budget() {
            out.push(format!(
                "in {} s, {} s per process gives the narrowest A/A ratio interval: ±{:.1} % from {} pairs",
                crate::fmt::trim_float(self.per_seconds),
                b.budget_s,
                b.ratio_pct.unwrap_or(0.0),
                b.pairs
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process whose iterations take `base` ns ± a small deterministic wiggle, every
    /// iteration starting right after the last.
    fn process(base: u64, n: usize, seed: u64) -> Series {
        let mut rng = SplitMix(seed);
        let mut t = 0;
        let samples = (0..n)
            .map(|_| {
                let l = base + rng.next_u64() % (base / 50);
                let s = (t, l);
                t += l;
                s
            })
            .collect();
        Series {
            samples,
            outside_ns: 50_000_000,
        }
    }

    #[test]
    fn two_groups_of_processes_are_found_as_modes_and_a_long_window_is_stable() {
        // 6 processes near 200 µs, 4 near 230 µs, 5,000 iterations (~1 s) each.
        let series: Vec<Series> = (0..10)
            .map(|i| process(if i % 3 == 0 { 230_000 } else { 200_000 }, 5_000, i))
            .collect();
        let n = analyse(&series, 0.0, 10, &[0.01, 0.1, 0.5], 10.0, 0.95);
        let m = n.modes.as_ref().expect("two modes");
        assert_eq!((m.low_count, m.high_count), (6, 4));
        assert!((m.high_ns / m.low_ns - 1.15).abs() < 0.02, "{m:?}");
        // Within a process the wiggle is ±1 %: the p50 of any window stays well within it.
        let w = n.budgets[2].within_pct.unwrap();
        assert!(w < 1.0, "{w}");
        // Between processes the spread is the modes' (~15 % apart).
        assert!(n.budgets[2].between_pct > 5.0, "{:?}", n.budgets[2]);
        // A process costs its budget plus 50 ms; in 10 s that is 1.1 s per pair at 0.5 s.
        assert_eq!(n.budgets[2].pairs, 9);
        assert_eq!(n.budgets[0].pairs, 83);
        // More pairs, a narrower A/A interval.
        assert!(n.budgets[0].ratio_pct.unwrap() < n.budgets[2].ratio_pct.unwrap());
        assert!(n.best_budget().unwrap().budget_s < 0.5);
        assert!(n.drift_pct.unwrap().abs() < 20.0);
    }

    #[test]
    fn identical_processes_have_no_modes_and_no_between_spread_beyond_their_wiggle() {
        let series: Vec<Series> = (0..8).map(|i| process(100_000, 3_000, i)).collect();
        let n = analyse(&series, 0.02, 10, &[0.005, 0.05], 4.0, 0.95);
        assert!(n.modes.is_none(), "{:?}", n.modes);
        assert!(n.budgets[1].between_pct < 1.5, "{:?}", n.budgets[1]);
        assert!(n.stable_budget(1.0).is_some());
    }
}
