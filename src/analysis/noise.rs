//! Where a cell's noise comes from (`alloclab calibrate --noise`): from long worker
//! processes that kept every iteration, the spread of a p50 *within* a process (windows
//! of one budget against the process's own long-run p50), *between* processes (each
//! process's p50 at that budget), and over the session (drift from the first processes
//! to the last); and from those, what a paired ratio's interval is expected to be with
//! the processes that fit into a given time at each budget.

use crate::analysis::stats::{half_width_pct, median, Interval, SplitMix};
use serde::Serialize;

/// The budgets `calibrate --noise` can judge, in seconds.
pub const BUDGETS: [f64; 10] = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0];

/// The seconds of processes the A/A figures may assume (`--per-seconds`): from one
/// second up to an hour. Beyond an hour no comparison the lab runs applies, and the
/// figure's resampling would only cost time.
pub const PER_SECONDS: std::ops::RangeInclusive<f64> = 1.0..=3600.0;

/// Parses `--per-seconds`: seconds within [`PER_SECONDS`].
pub fn parse_per_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && PER_SECONDS.contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a time the A/A figures can assume: give seconds from {} to {} (the time of a comparison's processes, e.g. compare's 18)",
            PER_SECONDS.start(),
            PER_SECONDS.end()
        )),
    }
}

/// The longest --process-time: a process keeps every iteration (up to a million), and a
/// plan of `--processes` of them is to end within the hour or so.
pub const MAX_PROCESS_TIME: f64 = 60.0;

/// `--process-time`: seconds, more than 0 and at most [`MAX_PROCESS_TIME`].
pub fn parse_process_time(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= MAX_PROCESS_TIME => Ok(v),
        _ => Err(format!(
            "'{s}' is not a process time calibrate --noise takes: give seconds above 0 and at most {MAX_PROCESS_TIME} (each process keeps every iteration it measures; 1 is the default)"
        )),
    }
}

/// The budgets judged in processes that measure `process_time` seconds of which the
/// first `warmup` are a warm-up: those of which two whole windows fit after the warm-up
/// (the within-process figure compares windows of one process).
pub fn budgets(process_time: f64, warmup: f64) -> Vec<f64> {
    BUDGETS
        .into_iter()
        .filter(|b| 2.0 * b <= process_time - warmup + 1e-9)
        .collect()
}

/// The shortest `--process-time` that judges at least one budget after `warmup`.
pub fn least_process_time(warmup: f64) -> f64 {
    warmup + 2.0 * BUDGETS[0]
}

/// Refuses settings that would measure nothing: a warm-up as long as the process, or a
/// process too short for two windows of the shortest budget after its warm-up.
pub fn check_settings(process_time: f64, warmup: f64) -> Result<(), String> {
    let least = secs(least_process_time(warmup));
    let shortest = BUDGETS[0];
    if warmup >= process_time {
        let shorter = process_time - 2.0 * shortest;
        let or_warmup = if shorter >= 0.0 {
            format!(", or a --warmup of at most {} s", secs(shorter))
        } else {
            String::new()
        };
        return Err(format!(
            "--warmup {warmup} is not shorter than --process-time {process_time}: the warm-up is cut from every process's measuring and nothing would be left to judge; give --process-time {least} or more (the warm-up and two windows of the shortest budget, {shortest} s){or_warmup}"
        ));
    }
    if budgets(process_time, warmup).is_empty() {
        return Err(format!(
            "--process-time {process_time} judges no budget: the shortest, {shortest} s, needs two windows after the --warmup of {warmup} s; give --process-time {least} or more"
        ));
    }
    Ok(())
}

/// Seconds as typed: up to microseconds, no trailing zeros.
fn secs(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A percentage with `digits` decimals, or "<0.01" (for 2) where it would print as zero:
/// an interval narrower than the p50s' nanosecond resolution is not "0".
fn small_pct(v: f64, digits: usize) -> String {
    let least = 0.5 * 10f64.powi(-(digits as i32));
    if v < least {
        format!("<{:.*}", digits, 2.0 * least)
    } else {
        format!("{v:.digits$}")
    }
}

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
    /// between the 10th and 90th percentile, over the median, in percent. None when
    /// fewer than two processes had a whole first window.
    pub between_pct: Option<f64>,
    /// What one process at this budget costs: its measured span (the budget, or its
    /// minimum iterations where they take longer), the warm-up, and what the processes
    /// spent outside measuring (median), in seconds.
    pub process_s: f64,
    /// Pairs of processes that fit into `per_seconds` at this budget.
    pub pairs: usize,
    /// With `pairs` paired processes drawn from these processes (an A/A comparison, two
    /// different processes in every pair): the median half-width of the ratio's interval
    /// at the session's confidence level, in percent. None when too few pairs give an
    /// interval at that level, or fewer processes than [`Noise::aa_min_processes`] ran.
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
    /// The cell measured ("system scale in-place size=1000000"); set by the command.
    pub cell: String,
    /// The CPU every process was kept on (`--cpu`); None where the kernel placed them.
    pub cpu: Option<u32>,
    /// Whether every process planned ran (false after Ctrl-C or SIGTERM).
    pub complete: bool,
    /// The processes that ran and that every figure is from.
    pub processes: usize,
    /// The processes asked for (`--processes`).
    pub processes_planned: usize,
    /// The signal that stopped the measurement early ("SIGINT", "SIGTERM"), if any.
    pub stopped_by: Option<String>,
    /// The fewest processes an A/A figure is given from: twice the pairs an interval at
    /// the level needs (12 at 95 %), so that the processes themselves hold as many
    /// disjoint pairs as one real A/A comparison needs. Resampling fewer processes
    /// claims a precision their few distinct ratios cannot support.
    pub aa_min_processes: usize,
    /// The confidence level its intervals are made at.
    #[serde(skip)]
    pub level: f64,
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
    /// What explains the spread between processes: each candidate cause tested against
    /// the processes' p50s (None where the processes' conditions were not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub causes: Option<crate::analysis::causes::Causes>,
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

/// The rank `k` (1-based, from each end) of the order-statistic interval of the median
/// of `n` values at `level`, and its coverage: the same choice as
/// [`crate::analysis::stats::median_ci`] (the widest `k` up to n/2 whose coverage
/// reaches the level, else 1), found in one pass over the binomial terms instead of one
/// pass per candidate, so that it stays linear in `n`. None below two values.
fn ci_rank(n: usize, level: f64) -> Option<(usize, f64)> {
    if n < 2 {
        return None;
    }
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0f64;
    // cdf = P(B <= i) for B ~ Binomial(n, 1/2), built up term by term.
    let mut cdf = 0.0f64;
    let mut k = 1;
    let mut coverage = 1.0 - 2.0 * ln_half_n.exp();
    for i in 0..n / 2 {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        cdf = (cdf + (ln_choose + ln_half_n).exp()).min(1.0);
        if i == 0 {
            coverage = 1.0 - 2.0 * cdf;
            continue;
        }
        // The coverage of rank i + 1 needs P(B <= i).
        let next = 1.0 - 2.0 * cdf;
        if i + 1 > n / 2 || next < level {
            break;
        }
        k = i + 1;
        coverage = next;
    }
    Some((k, coverage))
}

/// Work allowed for one A/A figure: about this many drawn ratios over all repetitions
/// (fewer repetitions for more pairs, never fewer than [`MIN_REPS`]), so that the figure
/// for a long `--per-seconds` costs about what a short one does.
const DRAWS: usize = 2_000_000;
const MIN_REPS: usize = 25;

/// The A/A figure was abandoned because the interrupt flag (or the caller's stop
/// condition) was raised.
#[derive(Debug, PartialEq, Eq)]
pub struct Stopped;

/// Median half-width (percent) of the interval of the median of `n` ratios a/b, each
/// from two *different* processes of `values` (an A/A comparison never pairs a process
/// with itself: that ratio is exactly 1 and would narrow the interval to nothing), over
/// up to `reps` draws. None when fewer than two values or pairs, or when `n` pairs give
/// no interval at `level`. `stop` is polled once per repetition.
fn expected_ratio_half_width(
    values: &[f64],
    n: usize,
    level: f64,
    reps: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Option<f64>, Stopped> {
    if values.len() < 2 || n < 2 {
        return Ok(None);
    }
    let Some((k, coverage)) = ci_rank(n, level) else {
        return Ok(None);
    };
    if coverage < level - 1e-12 {
        return Ok(None);
    }
    let reps = reps.min((DRAWS / n).max(MIN_REPS));
    let m = values.len() as u64;
    let mut rng = SplitMix(0x006e_6f69_7365 ^ n as u64);
    let mut widths = Vec::with_capacity(reps);
    let mut ratios = vec![0.0; n];
    for _ in 0..reps {
        if stop() {
            return Err(Stopped);
        }
        for r in ratios.iter_mut() {
            let a = (rng.next_u64() % m) as usize;
            // b is uniform over the other m - 1 processes.
            let mut b = (rng.next_u64() % (m - 1)) as usize;
            if b >= a {
                b += 1;
            }
            *r = values[a] / values[b];
        }
        // The median and the interval's two order statistics, each in linear time.
        let mut at = |i: usize| *ratios.select_nth_unstable_by(i, f64::total_cmp).1;
        let center = if n % 2 == 1 {
            at(n / 2)
        } else {
            (at(n / 2 - 1) + at(n / 2)) / 2.0
        };
        let low = at(k - 1);
        let high = at(n - k);
        widths.push(half_width_pct(
            center,
            Interval {
                low,
                high,
                coverage,
            },
        ));
    }
    Ok(median(&widths))
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
/// `per_seconds` of processes at the interval level `level`. `stop` is polled in every
/// long loop; Err when it said stop. The result says it is complete with
/// `series.len()` processes planned; the caller corrects that after an interrupt.
pub fn analyse(
    series: &[Series],
    warmup_s: f64,
    min_iters: usize,
    budgets: &[f64],
    per_seconds: f64,
    level: f64,
    stop: &dyn Fn() -> bool,
) -> Result<Noise, Stopped> {
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
    let aa_min_processes = 2 * crate::analysis::stats::rounds_needed(level);
    let enough_for_aa = full.iter().flatten().count() >= aa_min_processes;
    let mut at = Vec::with_capacity(budgets.len());
    for &b in budgets {
        // A window is what a process with this budget measures: at least `b` seconds
        // and at least `min_iters` iterations (the worker's rule).
        let mut devs = Vec::new();
        let mut firsts = Vec::new();
        let mut spans = Vec::new();
        for (s, whole) in series.iter().zip(&full) {
            if stop() {
                return Err(Stopped);
            }
            let Some(whole) = whole else { continue };
            let kept: Vec<&(u64, u64)> = s.samples.iter().filter(|x| x.0 >= skip).collect();
            let mut i = 0;
            while i < kept.len() {
                let t0 = kept[i].0;
                let mut j = i;
                while j < kept.len() && (j - i < min_iters || kept[j].0 < t0 + (b * 1e9) as u64) {
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
                    // A process's first window counts only when it is whole: a
                    // process that ended before the budget did not measure it.
                    if i == 0 && complete {
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
            (Some(lo), Some(hi), Some(m)) if m > 0.0 && s.len() >= 2 => Some(50.0 * (hi - lo) / m),
            _ => None,
        };
        let process_s = median(&spans).unwrap_or(b) + warmup_s + outside;
        let pairs = (per_seconds / (2.0 * process_s)).floor() as usize;
        let ratio_pct = if enough_for_aa {
            expected_ratio_half_width(&firsts, pairs, level, 400, stop)?
        } else {
            None
        };
        at.push(AtBudget {
            budget_s: b,
            windows: devs.len(),
            within_pct: within,
            between_pct: between,
            process_s,
            pairs,
            ratio_pct,
        });
    }
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
    Ok(Noise {
        cell: String::new(),
        cpu: None,
        complete: true,
        processes: series.len(),
        processes_planned: series.len(),
        stopped_by: None,
        aa_min_processes,
        level,
        modes: modes(&p50s, 2.0 * long_noise),
        process_p50_ns: p50s,
        budgets: at,
        drift_pct: drift,
        warmup_s,
        first_seconds_pct: first_seconds,
        per_seconds,
        causes: None,
    })
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
        let ran = if self.complete {
            format!("{} processes", self.processes)
        } else {
            format!(
                "incomplete: {} of {} processes ran ({} stopped the rest)",
                self.processes,
                self.processes_planned,
                self.stopped_by.as_deref().unwrap_or("a signal")
            )
        };
        let pinned = self.cpu.map_or(String::new(), |c| {
            format!(", every process kept on CPU {c} (--cpu)")
        });
        let mut out = vec![format!(
            "noise of {cell}: {ran}{pinned}, every iteration kept; a budget is the first seconds of a process's measuring after a warm-up of {} s",
            self.warmup_s
        )];
        out.push(format!(
            "{:>7}  {:>8}  {:>14}  {:>17}  {:>11}  {:>6}  {:>14}",
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
                b.between_pct.map_or("-".into(), |w| format!("{w:.2}")),
                b.process_s * 1e3,
                b.pairs,
                b.ratio_pct.map_or("-".into(), |r| small_pct(r, 2))
            ));
        }
        out.push(format!(
            "within: how far one process's p50 over a window of that length strays from the same process's p50 over its whole run (95th percentile over windows); between: the spread of the processes' p50s over their first window; process: the budget plus what a process costs outside measuring; pairs: paired processes that fit into {} s; A/A ratio: the median half-width of a ratio's interval from that many pairs of these processes",
            crate::fmt::trim_float(self.per_seconds)
        ));
        if self.process_p50_ns.len() < self.aa_min_processes {
            out.push(format!(
                "A/A ratio: not given from {} processes; it needs at least {} (as many disjoint pairs as an interval at {} needs): more --processes",
                self.process_p50_ns.len(),
                self.aa_min_processes,
                crate::analysis::stats::level_text(self.level)
            ));
        }
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
        if let Some(c) = &self.causes {
            out.extend(c.describe());
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
        if !self.complete {
            out.push(format!(
                "incomplete: {} after {} of {} processes; every figure above is from those {}",
                self.stopped_by.as_deref().unwrap_or("a signal"),
                self.processes,
                self.processes_planned,
                self.processes
            ));
        }
        if let Some(b) = self.best_budget() {
            out.push(format!(
                "in {} s, {} s per process gives the narrowest A/A ratio interval: ±{} % from {} pairs",
                crate::fmt::trim_float(self.per_seconds),
                b.budget_s,
                small_pct(b.ratio_pct.unwrap_or(0.0), 1),
                b.pairs
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::median_ci;

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
        // 8 processes near 200 µs, 4 near 230 µs, 5,000 iterations (~1 s) each.
        let series: Vec<Series> = (0..12)
            .map(|i| process(if i % 3 == 0 { 230_000 } else { 200_000 }, 5_000, i))
            .collect();
        let n = analyse(&series, 0.0, 10, &[0.01, 0.1, 0.5], 10.0, 0.95, &|| false).unwrap();
        let m = n.modes.as_ref().expect("two modes");
        assert_eq!((m.low_count, m.high_count), (8, 4));
        assert!((m.high_ns / m.low_ns - 1.15).abs() < 0.02, "{m:?}");
        // Within a process the wiggle is ±1 %: the p50 of any window stays well within it.
        let w = n.budgets[2].within_pct.unwrap();
        assert!(w < 1.0, "{w}");
        // Between processes the spread is the modes' (~15 % apart).
        assert!(
            n.budgets[2].between_pct.unwrap() > 5.0,
            "{:?}",
            n.budgets[2]
        );
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
        let n = analyse(&series, 0.02, 10, &[0.005, 0.05], 4.0, 0.95, &|| false).unwrap();
        assert!(n.modes.is_none(), "{:?}", n.modes);
        assert!(
            n.budgets[1].between_pct.unwrap() < 1.5,
            "{:?}",
            n.budgets[1]
        );
        assert!(n.stable_budget(1.0).is_some());
    }

    #[test]
    fn an_aa_pair_is_always_two_different_processes() {
        // Two processes 10 % apart: every A/A ratio is 1.1 or 1/1.1, so the interval of
        // their median spans both. Pairing a process with itself (ratio exactly 1, half
        // the draws) put the interval at [1, 1]: ±0.00 %.
        let w = expected_ratio_half_width(&[100.0, 110.0], 83, 0.95, 400, &|| false)
            .unwrap()
            .unwrap();
        assert!(w > 9.0, "{w}");
        // Four processes spread ±5 %: never narrower than the closest two of them.
        let v = [95.0, 98.0, 102.0, 105.0];
        let w = expected_ratio_half_width(&v, 148, 0.95, 400, &|| false)
            .unwrap()
            .unwrap();
        assert!(w >= 100.0 * (102.0 / 98.0 - 1.0) - 1e-9, "{w}");
    }

    #[test]
    fn the_interval_rank_is_median_cis_own_in_linear_time() {
        for level in [0.5, 0.9, 0.95, 0.99, 0.999] {
            for n in 2..400 {
                let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
                let ci = median_ci(&v, level).unwrap();
                let (k, coverage) = ci_rank(n, level).unwrap();
                assert_eq!(ci.low, (k - 1) as f64, "n {n} level {level}");
                assert!((ci.coverage - coverage).abs() < 1e-9, "n {n} level {level}");
            }
        }
        assert_eq!(ci_rank(1, 0.95), None);
        // A million pairs: found at once (one pass), and near n/2 - 1.96 sqrt(n)/2.
        let (k, _) = ci_rank(1_000_000, 0.95).unwrap();
        assert!((k as f64 - (500_000.0 - 980.0)).abs() < 5.0, "{k}");
    }

    #[test]
    fn too_few_processes_give_no_aa_figure_and_say_how_many_it_needs() {
        let four: Vec<Series> = (0..4).map(|i| process(100_000, 3_000, i)).collect();
        let n = analyse(&four, 0.01, 10, &[0.005, 0.05], 10.0, 0.95, &|| false).unwrap();
        assert_eq!(n.aa_min_processes, 12);
        assert!(n.budgets.iter().all(|b| b.ratio_pct.is_none()), "{n:?}");
        assert!(n.best_budget().is_none());
        let text = n.describe("cell").join("\n");
        assert!(
            text.contains("not given from 4 processes; it needs at least 12"),
            "{text}"
        );
        // Twelve processes: the figure is given, and the sentence is not.
        let twelve: Vec<Series> = (0..12).map(|i| process(100_000, 3_000, i)).collect();
        let n = analyse(&twelve, 0.01, 10, &[0.005, 0.05], 10.0, 0.95, &|| false).unwrap();
        assert!(n.budgets.iter().all(|b| b.ratio_pct.is_some()), "{n:?}");
        assert!(!n.describe("cell").join("\n").contains("not given"));
        // At 99 % a real A/A comparison needs 8 pairs: 16 processes.
        let n = analyse(&twelve, 0.01, 10, &[0.005], 10.0, 0.99, &|| false).unwrap();
        assert_eq!(n.aa_min_processes, 16);
        assert!(n.budgets[0].ratio_pct.is_none());
    }

    #[test]
    fn the_analysis_polls_its_stop_condition_in_the_resampling_too() {
        use std::cell::Cell;
        let series: Vec<Series> = (0..12).map(|i| process(100_000, 3_000, i)).collect();
        assert_eq!(
            analyse(&series, 0.01, 10, &[0.005], 3600.0, 0.95, &|| true).err(),
            Some(Stopped)
        );
        // The window loop polls once per process (12 times); a stop raised after them
        // still stops the A/A resampling.
        let calls = Cell::new(0);
        let stop = || {
            calls.set(calls.get() + 1);
            calls.get() > 12
        };
        assert_eq!(
            analyse(&series, 0.01, 10, &[0.005], 3600.0, 0.95, &stop).err(),
            Some(Stopped)
        );
        assert_eq!(calls.get(), 13);
        // An hour of pairs costs about what DRAWS ratios cost: few repetitions.
        let calls = Cell::new(0);
        let count = || {
            calls.set(calls.get() + 1);
            false
        };
        let n = analyse(&series, 0.01, 10, &[0.005], 3600.0, 0.95, &count).unwrap();
        let pairs = n.budgets[0].pairs;
        assert!(pairs > 20_000, "{pairs}");
        assert_eq!(calls.get(), 12 + (DRAWS / pairs).max(MIN_REPS));
        assert!(n.budgets[0].ratio_pct.is_some());
    }

    #[test]
    fn settings_that_measure_nothing_are_refused_with_what_would_work() {
        let e = check_settings(0.05, 0.2).unwrap_err();
        assert!(e.contains("not shorter than --process-time 0.05"), "{e}");
        assert!(e.contains("--process-time 0.21 or more"), "{e}");
        assert!(e.contains("--warmup of at most 0.04 s"), "{e}");
        // --process-time 0.001 with the default warm-up, then with none.
        let e = check_settings(0.001, 0.01).unwrap_err();
        assert!(e.contains("not shorter than --process-time 0.001"), "{e}");
        assert!(e.contains("--process-time 0.02 or more"), "{e}");
        assert!(!e.contains("--warmup of at most"), "{e}");
        let e = check_settings(0.001, 0.0).unwrap_err();
        assert!(e.contains("--process-time 0.001 judges no budget"), "{e}");
        assert!(e.contains("--process-time 0.01 or more"), "{e}");
        let e = check_settings(0.019, 0.01).unwrap_err();
        assert!(e.contains("--process-time 0.02 or more"), "{e}");
        assert_eq!(check_settings(0.02, 0.01), Ok(()));
        assert_eq!(budgets(0.02, 0.01), vec![0.005]);
        assert_eq!(budgets(1.0, 0.01), vec![0.005, 0.01, 0.02, 0.05, 0.1, 0.2]);
        assert!((least_process_time(0.001) - 0.011).abs() < 1e-12);
    }

    #[test]
    fn a_figure_below_the_printed_resolution_is_not_zero() {
        assert_eq!(small_pct(0.0, 2), "<0.01");
        assert_eq!(small_pct(0.004, 2), "<0.01");
        assert_eq!(small_pct(0.006, 2), "0.01");
        assert_eq!(small_pct(0.04, 1), "<0.1");
        assert_eq!(small_pct(1.44, 1), "1.4");
    }

    #[test]
    fn per_seconds_is_bounded() {
        assert_eq!(parse_per_seconds("10"), Ok(10.0));
        assert_eq!(parse_per_seconds("3600"), Ok(3600.0));
        for bad in ["86400", "0.5", "0", "-1", "inf", "NaN", "x"] {
            let e = parse_per_seconds(bad).unwrap_err();
            assert!(e.contains("from 1 to 3600"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_process_time_is_bounded() {
        assert_eq!(parse_process_time("1"), Ok(1.0));
        assert_eq!(parse_process_time("60"), Ok(60.0));
        for bad in ["86400", "60.5", "0", "-1", "nan", "inf", "x"] {
            let e = parse_process_time(bad).unwrap_err();
            assert!(e.contains("at most 60"), "{bad}: {e}");
        }
    }
}
