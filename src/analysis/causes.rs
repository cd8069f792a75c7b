//! What explains the spread of one cell's processes (`alloclab calibrate --noise`): each
//! process's p50 against what its measured phase went through ([`Conditions`]: the CPU
//! it ran on, migrations, run delay, involuntary switches, steal, CPU pressure, huge
//! pages). A count is tested by Spearman's rank correlation with the p50s, the CPU by the
//! difference between the CPUs' median p50s; each with a permutation p-value, and a cause
//! is said to explain the spread only below 0.05 divided by the causes tested
//! (Bonferroni), so that testing seven candidates does not find one by chance.

use crate::analysis::stats::{median, SplitMix};
use crate::model::conditions::Conditions;
use serde::Serialize;

/// Shuffles of a permutation test: p-values down to 1/10,000.
const SHUFFLES: usize = 9_999;

/// The family-wise error rate the verdicts keep.
const ALPHA: f64 = 0.05;

/// One process: its p50 and what its measured phase went through.
#[derive(Clone, Debug)]
pub struct Process {
    /// The process's p50 over its measured phase, in ns.
    pub p50_ns: f64,
    /// Its conditions (None from a worker that did not read them).
    pub conditions: Option<Conditions>,
    /// Involuntary context switches of the process during the phase.
    pub involuntary_switches: Option<u64>,
}

/// One candidate cause, judged.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Cause {
    /// Its name ("run delay", "CPU").
    pub name: &'static str,
    /// Processes with a value of it.
    pub processes: usize,
    /// Its values in words: the range, or each CPU's median p50 and processes.
    pub values: String,
    /// Spearman's ρ of it against the p50s (counts only).
    pub rho: Option<f64>,
    /// The CPUs' largest difference of median p50s, in % of the fastest CPU's (CPU only).
    pub difference_pct: Option<f64>,
    /// The permutation p-value of ρ or of the difference; None where it could not be
    /// tested (the same value in every process, or too few processes with a value).
    pub p: Option<f64>,
    /// Whether it explains the spread: p below 0.05 over the causes tested.
    pub explains: bool,
    /// Why it was not tested, where it was not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untested: Option<String>,
}

/// Every candidate, judged, and the threshold their p-values were held to.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Causes {
    /// Processes with a p50.
    pub processes: usize,
    /// The p-value below which a cause explains the spread (0.05 over the causes
    /// tested).
    pub threshold: f64,
    pub causes: Vec<Cause>,
}

/// Average ranks (ties share the mean of their places), 1-based.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for k in &idx[i..=j] {
            r[*k] = mean;
        }
        i = j + 1;
    }
    r
}

/// Pearson's correlation of two equally long series; None where either is constant.
fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Spearman's ρ of `x` against `y` and its two-sided permutation p-value.
fn spearman(x: &[f64], y: &[f64], rng: &mut SplitMix) -> Option<(f64, f64)> {
    let (rx, mut ry) = (ranks(x), ranks(y));
    let rho = pearson(&rx, &ry)?;
    let mut as_far = 0;
    for _ in 0..SHUFFLES {
        rng.shuffle(&mut ry);
        if pearson(&rx, &ry).is_some_and(|r| r.abs() >= rho.abs() - 1e-12) {
            as_far += 1;
        }
    }
    Some((rho, (as_far + 1) as f64 / (SHUFFLES + 1) as f64))
}

/// The largest difference between groups' median p50s, in % of the lowest median, over
/// groups of at least two processes; None with fewer than two such groups.
fn group_spread(labels: &[u32], p50s: &[f64]) -> Option<f64> {
    let mut groups: Vec<u32> = labels.to_vec();
    groups.sort_unstable();
    groups.dedup();
    let medians: Vec<f64> = groups
        .iter()
        .filter_map(|g| {
            let v: Vec<f64> = labels
                .iter()
                .zip(p50s)
                .filter(|(l, _)| *l == g)
                .map(|(_, p)| *p)
                .collect();
            (v.len() >= 2).then(|| median(&v)).flatten()
        })
        .collect();
    let lo = medians.iter().copied().reduce(f64::min)?;
    let hi = medians.iter().copied().reduce(f64::max)?;
    (medians.len() >= 2 && lo > 0.0).then(|| 100.0 * (hi / lo - 1.0))
}

fn fmt_value(v: f64, unit: &str) -> String {
    match unit {
        "ns" => crate::fmt::fmt_ns(v),
        "µs" => crate::fmt::fmt_ns(v * 1e3),
        "%" => format!("{:.1} %", v * 100.0),
        _ if v.fract() == 0.0 => crate::fmt::group_thousands(v as i64),
        _ => crate::fmt::fmt_count(v),
    }
}

/// Judges every candidate against the processes' p50s (`seed` fixes the shuffles).
pub fn explain(processes: &[Process], seed: u64) -> Causes {
    let mut rng = SplitMix(seed);
    type Get = fn(&Process) -> Option<f64>;
    let counts: [(&'static str, &'static str, Get); 6] = [
        ("run delay", "ns", |p| {
            Some(p.conditions.as_ref()?.run_delay_ns? as f64)
        }),
        ("involuntary switches", "", |p| {
            Some(p.involuntary_switches? as f64)
        }),
        ("migrations", "", |p| {
            Some(p.conditions.as_ref()?.migrations? as f64)
        }),
        ("steal", "ns", |p| {
            Some(p.conditions.as_ref()?.steal_ns? as f64)
        }),
        ("CPU pressure", "µs", |p| {
            Some(p.conditions.as_ref()?.cpu_pressure_us? as f64)
        }),
        ("huge-page coverage", "%", |p| {
            p.conditions.as_ref()?.huge_page_coverage()
        }),
    ];
    let mut causes = Vec::new();
    for (name, unit, get) in counts {
        let pairs: Vec<(f64, f64)> = processes
            .iter()
            .filter_map(|p| Some((get(p)?, p.p50_ns)))
            .collect();
        let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
        let lo = x.iter().copied().reduce(f64::min);
        let hi = x.iter().copied().reduce(f64::max);
        let values = match (lo, hi) {
            (Some(l), Some(h)) if l == h => format!("{} in every process", fmt_value(l, unit)),
            (Some(l), Some(h)) => format!("{} to {}", fmt_value(l, unit), fmt_value(h, unit)),
            _ => "not read".to_string(),
        };
        let tested = if x.len() < 4 {
            Err(format!("{} processes with a value; it needs 4", x.len()))
        } else {
            spearman(&x, &y, &mut rng).ok_or_else(|| "explains nothing here".to_string())
        };
        causes.push(Cause {
            name,
            processes: x.len(),
            values,
            rho: tested.as_ref().ok().map(|t| t.0),
            difference_pct: None,
            p: tested.as_ref().ok().map(|t| t.1),
            explains: false,
            untested: tested.err(),
        });
    }
    // The CPU, where the process stayed on one for its whole phase.
    let on_cpu: Vec<(u32, f64)> = processes
        .iter()
        .filter_map(|p| {
            let c = p.conditions.as_ref()?;
            c.stayed()?.then_some((c.cpu_start?, p.p50_ns))
        })
        .collect();
    let (labels, p50s): (Vec<u32>, Vec<f64>) = on_cpu.iter().copied().unzip();
    let mut cpus: Vec<u32> = labels.clone();
    cpus.sort_unstable();
    cpus.dedup();
    let values = cpus
        .iter()
        .map(|c| {
            let v: Vec<f64> = on_cpu
                .iter()
                .filter(|(l, _)| l == c)
                .map(|(_, p)| *p)
                .collect();
            format!(
                "cpu{c} {} ({})",
                median(&v).map_or("-".into(), crate::fmt::fmt_ns),
                v.len()
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let moved = processes.len() - on_cpu.len();
    let values = if moved > 0 {
        format!("{values}; {moved} moved or unread")
    } else {
        values
    };
    let tested = match group_spread(&labels, &p50s) {
        None => Err("fewer than two CPUs with two processes that stayed on them".to_string()),
        Some(d) => {
            let mut shuffled = labels.clone();
            let mut as_far = 0;
            for _ in 0..SHUFFLES {
                rng.shuffle(&mut shuffled);
                if group_spread(&shuffled, &p50s).is_some_and(|s| s >= d - 1e-12) {
                    as_far += 1;
                }
            }
            Ok((d, (as_far + 1) as f64 / (SHUFFLES + 1) as f64))
        }
    };
    causes.push(Cause {
        name: "CPU",
        processes: on_cpu.len(),
        values,
        rho: None,
        difference_pct: tested.as_ref().ok().map(|t| t.0),
        p: tested.as_ref().ok().map(|t| t.1),
        explains: false,
        untested: tested.err(),
    });
    let n_tested = causes.iter().filter(|c| c.p.is_some()).count().max(1);
    let threshold = ALPHA / n_tested as f64;
    for c in &mut causes {
        c.explains = c.p.is_some_and(|p| p < threshold);
    }
    // The explaining ones first, then by p.
    causes.sort_by(|a, b| {
        b.explains
            .cmp(&a.explains)
            .then(a.p.unwrap_or(2.0).total_cmp(&b.p.unwrap_or(2.0)))
    });
    Causes {
        processes: processes.len(),
        threshold,
        causes,
    }
}

impl Causes {
    /// The lines `calibrate --noise` prints: the verdict first, then one line a cause.
    pub fn describe(&self) -> Vec<String> {
        let found: Vec<&str> = self
            .causes
            .iter()
            .filter(|c| c.explains)
            .map(|c| c.name)
            .collect();
        let mut out = vec![if found.is_empty() {
            format!(
                "what moves a process's p50 here: none of the {} candidates explains the spread of these {} processes (each tested at p < {})",
                self.causes.len(),
                self.processes,
                trim_p(self.threshold)
            )
        } else {
            format!(
                "what moves a process's p50 here: {} (p < {} over {} processes)",
                found.join(", "),
                trim_p(self.threshold),
                self.processes
            )
        }];
        for c in &self.causes {
            let stat = match (c.rho, c.difference_pct) {
                (Some(r), _) => format!("ρ {r:+.2}"),
                (None, Some(d)) => format!("{d:+.1} %"),
                _ => String::new(),
            };
            let sep = if c.untested.is_some() && c.values.ends_with("in every process") {
                ":"
            } else {
                ";"
            };
            let judged = match (&c.untested, c.p) {
                (Some(why), _) => why.clone(),
                (None, Some(p)) => format!(
                    "{stat}, p {}: {}",
                    trim_p(p),
                    if c.explains {
                        "explains it"
                    } else {
                        "no effect shown"
                    }
                ),
                _ => String::new(),
            };
            out.push(format!("  {:<21} {}{sep} {judged}", c.name, c.values));
        }
        out.push("ρ: Spearman's rank correlation with the processes' p50s; CPU: the largest difference of the CPUs' median p50s among processes that stayed on one; p: a permutation test's".to_string());
        out
    }
}

fn trim_p(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.2}")
    } else {
        format!("{p:.4}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(p50: f64, cpu: u32, delay: u64, huge: u64) -> Process {
        Process {
            p50_ns: p50,
            conditions: Some(Conditions {
                pinned: None,
                cpu_start: Some(cpu),
                cpu_end: Some(cpu),
                migrations: Some(0),
                run_delay_ns: Some(delay),
                steal_ns: Some(0),
                cpu_pressure_us: Some(delay / 1000),
                anon_bytes: Some(8 << 20),
                anon_huge_bytes: Some(huge),
                unavailable: Default::default(),
            }),
            involuntary_switches: Some(3),
        }
    }

    #[test]
    fn ranks_share_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    /// Processes slower on cpu1, with run delay unrelated to the time: the CPU explains
    /// the spread, the delay does not, and constant figures are not tested.
    #[test]
    fn a_cpu_that_is_slower_is_named_and_unrelated_figures_are_not() {
        let delays = [5, 1, 9, 3, 7, 2, 8, 4, 6, 0, 11, 10];
        let ps: Vec<Process> = (0..12)
            .map(|i| {
                let cpu = (i % 2) as u32;
                let p50 = 218_000.0 + 14_000.0 * cpu as f64 + (i * 37 % 11) as f64 * 100.0;
                process(p50, cpu, delays[i] * 1000, 0)
            })
            .collect();
        let c = explain(&ps, 1);
        let by = |n: &str| c.causes.iter().find(|x| x.name == n).unwrap().clone();
        assert!(by("CPU").explains, "{c:?}");
        assert!(by("CPU").difference_pct.unwrap() > 5.0);
        assert!(!by("run delay").explains, "{c:?}");
        assert!(by("migrations").untested.is_some() && by("migrations").p.is_none());
        assert!(by("huge-page coverage").untested.is_some());
        // 3 tested: run delay, CPU pressure (follows the delay), CPU.
        assert!((c.threshold - 0.05 / 3.0).abs() < 1e-12, "{}", c.threshold);
        assert_eq!(c.causes[0].name, "CPU", "explaining causes first");
        assert!(
            c.describe()[0].contains(": CPU (p < 0.02"),
            "{:?}",
            c.describe()
        );
    }

    /// A figure that rises with the time is found, with ρ = 1 and the least p the
    /// shuffles allow; the same figure shuffled against the times is not.
    #[test]
    fn a_figure_that_moves_with_the_time_is_found() {
        let ps: Vec<Process> = (0..12u64)
            .map(|i| process(200_000.0 + i as f64 * 1000.0, 0, i * 50_000, 0))
            .collect();
        let c = explain(&ps, 7);
        let delay = c.causes.iter().find(|x| x.name == "run delay").unwrap();
        assert!(delay.explains && (delay.rho.unwrap() - 1.0).abs() < 1e-12);
        assert!(delay.p.unwrap() <= 2.0 / (SHUFFLES + 1) as f64);
        let cpu = c.causes.iter().find(|x| x.name == "CPU").unwrap();
        assert!(cpu.untested.is_some(), "one CPU: nothing to compare");
        // Few processes: not tested rather than guessed.
        let few = explain(&ps[..3], 7);
        assert!(few.causes.iter().all(|x| x.p.is_none()), "{few:?}");
        assert!(few.describe()[0].contains("none of the 7 candidates"));
    }
}
