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
#[derive(Clone, Debug, Serialize, PartialEq)]
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
    /// Each process's p50 and figures, in the order they ran: what the tests read.
    pub per_process: Vec<Process>,
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

/// How a candidate is tested.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    /// A disturbance: more of it can only slow a process, so only ρ > 0 counts.
    Slower,
    /// Either way (huge pages can speed a process or slow it).
    Both,
}

/// The permutation p-value of `stat` among the statistics of `SHUFFLES` shuffles of
/// `labels` (`stat_of` gives a labelling's statistic; larger is more extreme), and the
/// least p any arrangement could give: that of `extreme`.
fn permutation_p<T: Clone>(
    labels: &[T],
    extreme: &[T],
    stat_of: &dyn Fn(&[T]) -> Option<f64>,
    rng: &mut SplitMix,
) -> Option<(f64, f64)> {
    let observed = stat_of(labels)?;
    let most = stat_of(extreme).unwrap_or(observed).max(observed);
    let mut shuffled = labels.to_vec();
    let (mut as_far, mut as_far_as_most) = (0usize, 0usize);
    for _ in 0..SHUFFLES {
        rng.shuffle(&mut shuffled);
        if let Some(s) = stat_of(&shuffled) {
            as_far += usize::from(s >= observed - 1e-12);
            as_far_as_most += usize::from(s >= most - 1e-12);
        }
    }
    let p = |k: usize| (k + 1) as f64 / (SHUFFLES + 1) as f64;
    Some((p(as_far), p(as_far_as_most)))
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

/// A p-value with the digits that tell it from a threshold: 0.41, 0.0167, 0.00714.
pub fn fmt_p(p: f64) -> String {
    if p >= 0.1 {
        format!("{p:.2}")
    } else if p >= 0.01 {
        format!("{p:.4}")
    } else if p >= 0.001 {
        format!("{p:.5}")
    } else {
        format!("{p:.6}")
    }
}

/// A candidate before the verdict: its figures, or why it is not tested.
struct Judged {
    cause: Cause,
    /// The least p any arrangement of its values could give.
    least_p: Option<f64>,
}

type Get = fn(&Process) -> Option<f64>;

/// The disturbances and huge pages: name, unit, side, the smallest difference that is
/// not the same (a figure varying by less is the same in every process), how a process
/// gives it.
const CANDIDATES: [(&str, &str, Side, f64, Get); 6] = [
    ("run delay", "ns", Side::Slower, 0.0, |p| {
        Some(p.conditions.as_ref()?.run_delay_ns? as f64)
    }),
    ("involuntary switches", "", Side::Slower, 0.0, |p| {
        Some(p.involuntary_switches? as f64)
    }),
    ("migrations", "", Side::Slower, 0.0, |p| {
        Some(p.conditions.as_ref()?.migrations? as f64)
    }),
    ("steal", "ns", Side::Slower, 0.0, |p| {
        Some(p.conditions.as_ref()?.steal_ns? as f64)
    }),
    ("CPU pressure", "µs", Side::Slower, 0.0, |p| {
        Some(p.conditions.as_ref()?.cpu_pressure_us? as f64)
    }),
    ("huge-page coverage", "%", Side::Both, 0.01, |p| {
        p.conditions.as_ref()?.huge_page_coverage()
    }),
];

fn judge_count(
    (name, unit, side, resolution, get): (&'static str, &str, Side, f64, Get),
    processes: &[Process],
    rng: &mut SplitMix,
) -> Judged {
    let pairs: Vec<(f64, f64)> = processes
        .iter()
        .filter_map(|p| Some((get(p)?, p.p50_ns)))
        .collect();
    let (x, y): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    let lo = x.iter().copied().reduce(f64::min);
    let hi = x.iter().copied().reduce(f64::max);
    let mut cause = Cause {
        name,
        processes: x.len(),
        values: match (lo, hi) {
            (Some(l), Some(h)) if h - l <= resolution => {
                format!("{} in every process", fmt_value(l, unit))
            }
            (Some(l), Some(h)) => format!("{} to {}", fmt_value(l, unit), fmt_value(h, unit)),
            _ => "not read".to_string(),
        },
        rho: None,
        difference_pct: None,
        p: None,
        explains: false,
        untested: None,
    };
    let varies = matches!((lo, hi), (Some(l), Some(h)) if h - l > resolution);
    if x.len() < 4 {
        cause.untested = Some(format!("read in {} processes; a test needs 4", x.len()));
        return Judged {
            cause,
            least_p: None,
        };
    }
    if !varies {
        cause.untested = Some(if resolution > 0.0 {
            "within 1 % in every process: nothing to test".to_string()
        } else {
            "the same in every process: nothing to test".to_string()
        });
        return Judged {
            cause,
            least_p: None,
        };
    }
    let ry = ranks(&y);
    let rx = ranks(&x);
    // The most extreme arrangement: the largest figure with the slowest process.
    let mut extreme = rx.clone();
    extreme.sort_by(f64::total_cmp);
    let mut order: Vec<usize> = (0..ry.len()).collect();
    order.sort_by(|&a, &b| ry[a].total_cmp(&ry[b]));
    let mut most = vec![0.0; rx.len()];
    for (k, &i) in order.iter().enumerate() {
        most[i] = extreme[k];
    }
    let rho = pearson(&rx, &ry);
    let stat = |labels: &[f64]| {
        let r = pearson(labels, &ry)?;
        Some(if side == Side::Slower { r } else { r.abs() })
    };
    cause.rho = rho;
    match permutation_p(&rx, &most, &stat, rng) {
        Some((p, least)) => {
            cause.p = Some(p);
            Judged {
                cause,
                least_p: Some(least),
            }
        }
        None => {
            cause.untested = Some("the same in every process: nothing to test".to_string());
            Judged {
                cause,
                least_p: None,
            }
        }
    }
}

fn judge_cpu(processes: &[Process], rng: &mut SplitMix) -> Judged {
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
    let of = |c: u32| -> Vec<f64> {
        on_cpu
            .iter()
            .filter(|(l, _)| *l == c)
            .map(|(_, p)| *p)
            .collect()
    };
    let values = cpus
        .iter()
        .map(|&c| {
            let v = of(c);
            format!(
                "cpu{c} {} ({})",
                median(&v).map_or("-".into(), crate::fmt::fmt_ns),
                v.len()
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let moved = processes.len() - on_cpu.len();
    let mut cause = Cause {
        name: "CPU",
        processes: on_cpu.len(),
        values: if moved > 0 {
            format!("{values}; {moved} moved or unread")
        } else {
            values
        },
        rho: None,
        difference_pct: group_spread(&labels, &p50s),
        p: None,
        explains: false,
        untested: None,
    };
    if cause.difference_pct.is_none() {
        cause.untested =
            Some("fewer than two CPUs with two processes that stayed on them".to_string());
        return Judged {
            cause,
            least_p: None,
        };
    }
    // The most extreme arrangement: the fastest processes on one CPU, the slowest on
    // another, each CPU keeping its number of processes.
    let mut order: Vec<usize> = (0..p50s.len()).collect();
    order.sort_by(|&a, &b| p50s[a].total_cmp(&p50s[b]));
    let mut sorted_labels = labels.clone();
    sorted_labels.sort_unstable();
    let mut most = vec![0; labels.len()];
    for (k, &i) in order.iter().enumerate() {
        most[i] = sorted_labels[k];
    }
    let stat = |l: &[u32]| group_spread(l, &p50s);
    if let Some((p, least)) = permutation_p(&labels, &most, &stat, rng) {
        cause.p = Some(p);
        return Judged {
            cause,
            least_p: Some(least),
        };
    }
    Judged {
        cause,
        least_p: None,
    }
}

/// Judges every candidate against the processes' p50s (`seed` fixes the shuffles).
/// The family the threshold divides 0.05 by is the candidates that could reach 0.05 at
/// all; one whose values could not reach the threshold in any arrangement is not tested.
/// `pinned`: the CPU every process was kept on (`--cpu`), which leaves no CPUs to compare.
pub fn explain(processes: &[Process], seed: u64, pinned: Option<u32>) -> Causes {
    let mut rng = SplitMix(seed);
    let mut judged: Vec<Judged> = CANDIDATES
        .iter()
        .map(|c| judge_count(*c, processes, &mut rng))
        .collect();
    let mut cpu = judge_cpu(processes, &mut rng);
    if let Some(c) = pinned {
        cpu.cause.untested = Some(format!(
            "every process kept on CPU {c} (--cpu): no CPUs to compare"
        ));
        cpu.least_p = None;
        cpu.cause.p = None;
    }
    judged.push(cpu);
    let family = judged
        .iter()
        .filter(|j| j.least_p.is_some_and(|p| p < ALPHA))
        .count()
        .max(1);
    let threshold = ALPHA / family as f64;
    let mut causes: Vec<Cause> = judged
        .into_iter()
        .map(|j| {
            let mut c = j.cause;
            if let Some(least) = j.least_p.filter(|&l| l >= threshold) {
                c.untested = Some(format!(
                    "cannot be shown from {} processes: no arrangement of these values gives p below {} (the least is {}); more --processes",
                    c.processes,
                    fmt_p(threshold),
                    fmt_p(least)
                ));
            }
            c.explains = c.untested.is_none() && c.p.is_some_and(|p| p < threshold);
            c
        })
        .collect();
    // The explaining ones first, then the tested by p, then the rest.
    causes.sort_by(|a, b| {
        let key = |c: &Cause| (!c.explains, c.untested.is_some());
        key(a)
            .cmp(&key(b))
            .then(a.p.unwrap_or(2.0).total_cmp(&b.p.unwrap_or(2.0)))
    });
    Causes {
        processes: processes.len(),
        threshold,
        causes,
        per_process: processes.to_vec(),
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
        let tested = self.causes.iter().filter(|c| c.untested.is_none()).count();
        let mut out = vec![if !found.is_empty() {
            format!(
                "what moves a process's p50 here: {} (p below {}; {tested} of {} candidates tested over {} processes)",
                found.join(", "),
                fmt_p(self.threshold),
                self.causes.len(),
                self.processes
            )
        } else if tested == 0 {
            format!(
                "what moves a process's p50 here: nothing could be tested from these {} processes (each candidate is unread, the same in every process, or needs more processes to reach p below {}): more --processes",
                self.processes,
                fmt_p(self.threshold)
            )
        } else {
            format!(
                "what moves a process's p50 here: none of the {tested} candidates tested (of {}) explains the spread of these {} processes (p below {} needed)",
                self.causes.len(),
                self.processes,
                fmt_p(self.threshold)
            )
        }];
        for c in &self.causes {
            let judged = match (&c.untested, c.p) {
                (Some(why), _) => why.clone(),
                (None, Some(p)) => {
                    let stat = match (c.rho, c.difference_pct) {
                        (Some(r), _) => format!("ρ {r:+.2}"),
                        (None, Some(d)) => format!("{d:+.1} %"),
                        _ => String::new(),
                    };
                    let verdict = if c.explains {
                        "explains it"
                    } else if c.rho.is_some_and(|r| r < 0.0) && c.name != "huge-page coverage" {
                        "no effect shown (more of it went with faster processes)"
                    } else {
                        "no effect shown"
                    };
                    format!("{stat}, p {}: {verdict}", fmt_p(p))
                }
                _ => String::new(),
            };
            // "0 in every process: nothing to test", not the sameness twice.
            let line = match judged.split_once(": nothing to test") {
                Some(_) if c.values.ends_with("in every process") => {
                    format!("{}: nothing to test", c.values)
                }
                _ => format!("{}; {judged}", c.values),
            };
            out.push(format!("  {:<21} {line}", c.name));
        }
        out.push("ρ: Spearman's rank correlation with the processes' p50s; CPU: the largest difference of the CPUs' median p50s among processes that stayed on one; p: a permutation test's p-value, one-sided for the disturbances (more of them can only slow a process), two-sided for huge pages and the CPU".to_string());
        out
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
        let c = explain(&ps, 1, None);
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
            c.describe()[0].contains(": CPU (p below 0.0167; 3 of 7 candidates tested"),
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
        let c = explain(&ps, 7, None);
        let delay = c.causes.iter().find(|x| x.name == "run delay").unwrap();
        assert!(delay.explains && (delay.rho.unwrap() - 1.0).abs() < 1e-12);
        assert!(delay.p.unwrap() <= 2.0 / (SHUFFLES + 1) as f64);
        let cpu = c.causes.iter().find(|x| x.name == "CPU").unwrap();
        assert!(cpu.untested.is_some(), "one CPU: nothing to compare");
        // Few processes: not tested rather than guessed.
        let few = explain(&ps[..3], 7, None);
        assert!(few.causes.iter().all(|x| x.p.is_none()), "{few:?}");
        assert!(few.describe()[0].contains("nothing could be tested from these 3 processes"));
        // Four in perfect order: no arrangement of four reaches the threshold (the least
        // one-sided p is 1/24), so it cannot be shown rather than "no effect".
        let four = explain(&ps[..4], 7, None);
        let delay = four.causes.iter().find(|x| x.name == "run delay").unwrap();
        assert!(!delay.explains, "{four:?}");
        assert!(
            delay
                .untested
                .as_deref()
                .is_some_and(|u| u.starts_with("cannot be shown from 4 processes")),
            "{delay:?}"
        );
    }

    /// A disturbance is tested one-sided: more run delay with faster processes is no
    /// cause, however strong the (negative) correlation.
    #[test]
    fn a_disturbance_that_goes_with_faster_processes_is_not_a_cause() {
        let ps: Vec<Process> = (0..12u64)
            .map(|i| process(200_000.0 + i as f64 * 1000.0, 0, (12 - i) * 50_000, 0))
            .collect();
        let c = explain(&ps, 3, None);
        let delay = c.causes.iter().find(|x| x.name == "run delay").unwrap();
        assert!(delay.rho.unwrap() < -0.99 && !delay.explains, "{delay:?}");
        assert!(delay.p.unwrap() > 0.9, "{delay:?}");
        assert!(c
            .describe()
            .iter()
            .any(|l| l.contains("went with faster processes")));
        // Huge pages are two-sided: more coverage with faster processes is named.
        let ps: Vec<Process> = (0..12u64)
            .map(|i| process(200_000.0 + i as f64 * 1000.0, 0, 0, (12 - i) << 19))
            .collect();
        let c = explain(&ps, 3, None);
        let huge = c
            .causes
            .iter()
            .find(|x| x.name == "huge-page coverage")
            .unwrap();
        assert!(huge.explains, "{huge:?}");
    }
}
