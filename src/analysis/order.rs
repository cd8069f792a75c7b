//! Order effects: whether a run depends on the run before it. The schedule shuffles the
//! order in every round, so every subject follows many different predecessors; if the
//! predecessor does not matter, the label "what ran before" is exchangeable among the
//! runs, and a permutation test of the between-group spread of the runs' residuals
//! (each run's log ratio to its own subject's median) says whether it does.

use crate::analysis::stats::{median, SplitMix};
use std::collections::BTreeMap;

/// The shufflings of the test and their seed (fixed: the same runs give the same p).
pub const PERMUTATIONS: usize = 1999;
pub const SEED: u64 = 0x006f_7264_6572;

/// One run: the subject it measured, the group of the run before it (e.g. that run's
/// allocator), and its value (a p50 or a wall time).
#[derive(Clone, Debug)]
pub struct Run {
    pub subject: usize,
    pub before: String,
    pub value: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct OrderEffect {
    /// The permutation p-value of "the run before does not matter".
    pub p: f64,
    pub runs: usize,
    pub groups: usize,
    /// The predecessor whose runs stray most: its name, the median of its runs' ratios to
    /// their subjects' medians (minus one, percent) and how many runs followed it.
    pub worst: (String, f64, usize),
}

impl OrderEffect {
    /// One line when the effect is significant at `level`, else None.
    pub fn describe(&self, level: f64, what: &str) -> Option<String> {
        (self.p < 1.0 - level).then(|| {
            format!(
                "order: a run depends on the run before it (permutation test over {} runs, p = {:.3}): {what} right after {} are {:+.1} % from their own medians ({} runs); the shuffled order spreads this over every subject, but it widens their intervals",
                self.runs, self.p, self.worst.0, self.worst.1, self.worst.2
            )
        })
    }
}

/// The between-group statistic: Σ n_g · mean_g² of the residuals (mean zero overall).
fn statistic(residuals: &[f64], groups: &[usize], count: usize) -> f64 {
    let mut sum = vec![0.0; count];
    let mut n = vec![0usize; count];
    for (r, &g) in residuals.iter().zip(groups) {
        sum[g] += r;
        n[g] += 1;
    }
    sum.iter()
        .zip(&n)
        .filter(|(_, &n)| n > 0)
        .map(|(s, &n)| s * s / n as f64)
        .sum()
}

/// Tests whether the runs depend on their predecessors' groups, with `permutations`
/// shuffles of the labels from `seed`. None with fewer than 12 runs or one group.
pub fn order_effect(runs: &[Run], permutations: usize, seed: u64) -> Option<OrderEffect> {
    let mut by_subject: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.value > 0.0) {
        by_subject.entry(r.subject).or_default().push(r.value);
    }
    let medians: BTreeMap<usize, f64> = by_subject
        .into_iter()
        .filter(|(_, v)| v.len() >= 3)
        .filter_map(|(s, v)| Some((s, median(&v)?)))
        .collect();
    let kept: Vec<(&Run, f64)> = runs
        .iter()
        .filter(|r| r.value > 0.0)
        .filter_map(|r| Some((r, (r.value / medians.get(&r.subject)?).ln())))
        .collect();
    let names: Vec<String> = {
        let mut n: Vec<String> = kept.iter().map(|(r, _)| r.before.clone()).collect();
        n.sort();
        n.dedup();
        n
    };
    if kept.len() < 12 || names.len() < 2 {
        return None;
    }
    let mean = kept.iter().map(|(_, x)| x).sum::<f64>() / kept.len() as f64;
    let residuals: Vec<f64> = kept.iter().map(|(_, x)| x - mean).collect();
    let mut groups: Vec<usize> = kept
        .iter()
        .map(|(r, _)| names.binary_search(&r.before).unwrap_or(0))
        .collect();
    let observed = statistic(&residuals, &groups, names.len());
    let mut rng = SplitMix(seed);
    let mut at_least = 0usize;
    for _ in 0..permutations {
        rng.shuffle(&mut groups);
        if statistic(&residuals, &groups, names.len()) >= observed - 1e-12 {
            at_least += 1;
        }
    }
    let worst = names
        .iter()
        .filter_map(|name| {
            let v: Vec<f64> = kept
                .iter()
                .filter(|(r, _)| r.before == *name)
                .map(|(_, x)| *x)
                .collect();
            Some((name.clone(), 100.0 * (median(&v)?.exp() - 1.0), v.len()))
        })
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))?;
    Some(OrderEffect {
        p: (at_least + 1) as f64 / (permutations + 1) as f64,
        runs: kept.len(),
        groups: names.len(),
        worst,
    })
}

/// The runs of a session in the order they ran, as (subject, value), with each run's
/// predecessor named by `group_of(subject)`: the first run has no predecessor and is
/// left out.
pub fn runs_in_sequence(
    sequence: &[(usize, Option<f64>)],
    group_of: &dyn Fn(usize) -> String,
) -> Vec<Run> {
    sequence
        .windows(2)
        .filter_map(|w| {
            Some(Run {
                subject: w[1].0,
                before: group_of(w[0].0),
                value: w[1].1?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three subjects in shuffled rounds; `penalty` is what running right after subject
    /// 2 adds to a run.
    fn session(penalty: f64, rounds: u64) -> Vec<Run> {
        let mut rng = SplitMix(9);
        let mut seq = Vec::new();
        for _ in 0..rounds {
            let mut order = vec![0usize, 1, 2];
            rng.shuffle(&mut order);
            seq.extend(order);
        }
        let base = [100.0, 200.0, 300.0];
        let mut out: Vec<(usize, Option<f64>)> = Vec::new();
        for (k, &s) in seq.iter().enumerate() {
            let wiggle = 1.0 + ((rng.next_u64() % 1000) as f64 - 500.0) / 50_000.0;
            let after2 = k > 0 && seq[k - 1] == 2;
            out.push((
                s,
                Some(base[s] * wiggle * if after2 { 1.0 + penalty } else { 1.0 }),
            ));
        }
        runs_in_sequence(&out, &|s| format!("s{s}"))
    }

    #[test]
    fn a_predecessor_that_slows_the_next_run_is_found_and_named() {
        let e = order_effect(&session(0.05, 40), 999, 1).unwrap();
        assert!(e.p < 0.01, "{e:?}");
        assert_eq!(e.worst.0, "s2");
        assert!((e.worst.1 - 3.0).abs() < 3.0, "{e:?}");
        assert!(e.describe(0.95, "runs").is_some());
    }

    #[test]
    fn without_an_effect_the_test_stays_quiet() {
        let e = order_effect(&session(0.0, 40), 999, 1).unwrap();
        assert!(e.p > 0.05, "{e:?}");
        assert!(e.describe(0.95, "runs").is_none());
        assert!(order_effect(&session(0.0, 2), 99, 1).is_none());
    }
}
