//! What a `serve` session says: per rate and allocator, the tail latency from each
//! request's intended start (median over the server processes), compared with the first
//! allocator's round by round; the server's memory per byte it says it holds; its
//! faults and CPU per request; and the highest rate whose p99 held the target.

use crate::analysis::stats::{compare_paired, median, Comparison};
use crate::model::serve::{RatePhase, ServeRecord};

/// One allocator at one rate, over its server processes.
#[derive(Clone, Debug)]
pub struct ServeRow {
    /// The allocator as given.
    pub allocator: String,
    /// Requests per second asked for.
    pub rate_per_s: u64,
    /// Processes that ran this rate.
    pub processes: usize,
    /// Medians over the processes of each one's percentile from the intended start, ns.
    pub p50_ns: f64,
    pub p99_ns: f64,
    pub p999_ns: f64,
    /// The largest latency of any process, ns.
    pub max_ns: f64,
    /// Median over processes of the p99 from the moment each request was written, ns.
    pub p99_from_sent_ns: f64,
    /// Each process's p99 from the intended start, in round order (round, ns).
    pub p99_by_round: Vec<(u32, f64)>,
    /// The p99 against the first allocator's at this rate, paired by round.
    pub vs_first: Option<Comparison>,
    /// The server's CPU time per request against the first allocator's, paired by round
    /// (what a throughput benchmark compares, at a rate below saturation).
    pub cpu_vs_first: Option<Comparison>,
    /// Replies per second that came back (median over processes).
    pub served_per_s: f64,
    /// Minor faults of the server per 1,000 requests in this phase (median).
    pub faults_per_1000: f64,
    /// The server's CPU time per request in this phase, µs (median).
    pub cpu_us_per_request: f64,
    /// Resident set at the phase's end (median), bytes.
    pub rss_end: f64,
    /// What the server says it holds at the phase's end (`used_memory`, median), bytes.
    pub used_end: Option<f64>,
    /// The latest a request went out after it was due (largest over processes), ns.
    pub send_lag_max_ns: u64,
    /// The longest one write of requests took (largest over processes), ns.
    pub write_wait_max_ns: u64,
    /// The server's memory syscalls per 1,000 requests (median over the processes that
    /// counted them): brk, mmap, munmap, madvise DONTNEED, FREE, other; or why none.
    pub calls_per_1000: Result<[f64; 6], String>,
}

impl ServeRow {
    /// Resident bytes per byte the server says it holds, at the phase's end.
    pub fn rss_per_used(&self) -> Option<f64> {
        self.used_end.filter(|u| *u > 0.0).map(|u| self.rss_end / u)
    }
}

/// A phase's percentile from the intended start, ns.
fn quantile(p: &RatePhase, q: f64, from_sent: bool) -> Option<f64> {
    let h = if from_sent {
        &p.from_sent
    } else {
        &p.from_intended
    };
    let h = h.decode().ok()?;
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64)
}

fn med(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.filter(|x| x.is_finite()).collect();
    median(&v).unwrap_or(f64::NAN)
}

/// The memory syscalls per 1,000 requests of `phases`, each kind's median over the
/// phases that counted them; the first reason where none did.
fn calls_per_1000(phases: &[(u32, &RatePhase)]) -> Result<[f64; 6], String> {
    let counted: Vec<([u64; 6], u64)> = phases
        .iter()
        .filter_map(|(_, p)| {
            let c = p.calls?;
            Some((
                [
                    c.brk,
                    c.mmap,
                    c.munmap,
                    c.madvise_dontneed,
                    c.madvise_free,
                    c.madvise_other,
                ],
                p.answered.max(1),
            ))
        })
        .collect();
    if counted.is_empty() {
        return Err(phases
            .iter()
            .find_map(|(_, p)| p.calls_unavailable.clone())
            .unwrap_or_else(|| "not counted".into()));
    }
    let mut out = [0.0; 6];
    for (k, o) in out.iter_mut().enumerate() {
        *o = med(counted
            .iter()
            .map(|(c, n)| 1000.0 * c[k] as f64 / *n as f64));
    }
    Ok(out)
}

/// The calls of a row in words: only the kinds it made.
pub fn calls_words(calls: &[f64; 6]) -> String {
    const NAMES: [&str; 6] = [
        "brk",
        "mmap",
        "munmap",
        "madvise(DONTNEED)",
        "madvise(FREE)",
        "other madvise",
    ];
    let made: Vec<String> = calls
        .iter()
        .zip(NAMES)
        .filter(|(v, _)| **v > 0.0)
        .map(|(v, n)| format!("{} {n}", crate::fmt::fmt_count(*v)))
        .collect();
    if made.is_empty() {
        "no memory syscalls".into()
    } else {
        made.join(", ")
    }
}

/// `values` (round, value) against the first allocator's, paired by round; the first
/// allocator's own are kept in `first` (and compared with nothing).
fn against(
    first: &mut Option<Vec<(u32, f64)>>,
    values: &[(u32, f64)],
    record: &ServeRecord,
) -> Option<Comparison> {
    let Some(base) = first else {
        *first = Some(values.to_vec());
        return None;
    };
    let pairs: Vec<(f64, f64)> = base
        .iter()
        .filter_map(|(r, b)| values.iter().find(|(r2, _)| r2 == r).map(|(_, v)| (*b, *v)))
        .collect();
    compare_paired(&pairs, record.noise_threshold, record.confidence)
}

/// A comparison in words: the ratio, its interval and the verdict; an interval that
/// reaches beyond the noise band on either side decides nothing, whatever its centre.
pub fn comparison_words(c: &Comparison, first: &str, band: f64) -> String {
    let interval = c
        .interval
        .map(|i| format!(" [{:.2}x, {:.2}x]", i.low, i.high))
        .unwrap_or_else(|| format!(" (no interval from {} pair(s) of processes)", c.pairs));
    format!(
        "{:.2}x {first}'s{interval}: {}",
        c.ratio,
        verdict_words(c, band)
    )
}

/// A comparison's verdict in words, as every surface gives it: an interval that reaches
/// beyond the noise band on either side decides nothing, whatever its centre.
pub fn verdict_words(c: &Comparison, band: f64) -> String {
    let open = c.interval.is_none_or(|i| {
        (i.low < 1.0 - band && i.high > 1.0 - band) || (i.low < 1.0 + band && i.high > 1.0 + band)
    });
    let verdict = match c.verdict {
        Some(crate::analysis::stats::Verdict::NoSignificantDifference) if open => {
            format!(
                "undecided (the interval reaches beyond ±{:.0} %)",
                band * 100.0
            )
        }
        Some(v) => v.words().to_string(),
        None => "undecided".into(),
    };
    verdict
}

/// Picks a server process's resident set and used_memory at one point of its life.
type Pick<'a> = dyn Fn(&crate::model::serve::ServerRun) -> Option<(u64, Option<u64>)> + 'a;

/// Every allocator's row at every rate, rates in the record's order, allocators in theirs.
pub fn rows(record: &ServeRecord) -> Vec<ServeRow> {
    let mut rows = Vec::new();
    for &rate in &record.rates_per_s {
        let mut first: Option<Vec<(u32, f64)>> = None;
        let mut first_cpu: Option<Vec<(u32, f64)>> = None;
        for a in &record.allocators {
            let phases: Vec<(u32, &RatePhase)> = a
                .runs
                .iter()
                .filter_map(|r| {
                    r.phases
                        .iter()
                        .find(|p| p.rate_per_s == rate)
                        .map(|p| (r.round, p))
                })
                .collect();
            if phases.is_empty() {
                continue;
            }
            let p99_by_round: Vec<(u32, f64)> = phases
                .iter()
                .filter_map(|(r, p)| Some((*r, quantile(p, 0.99, false)?)))
                .collect();
            let per_request = |p: &RatePhase, x: u64| x as f64 / p.answered.max(1) as f64;
            let cpu_by_round: Vec<(u32, f64)> = phases
                .iter()
                .map(|(r, p)| {
                    let cpu = (p.end.utime_ns + p.end.stime_ns)
                        .saturating_sub(p.start.utime_ns + p.start.stime_ns);
                    (*r, per_request(p, cpu))
                })
                .collect();
            let vs_first = against(&mut first, &p99_by_round, record);
            let cpu_vs_first = against(&mut first_cpu, &cpu_by_round, record);
            rows.push(ServeRow {
                allocator: a.allocator.clone(),
                rate_per_s: rate,
                processes: phases.len(),
                p50_ns: med(phases.iter().filter_map(|(_, p)| quantile(p, 0.5, false))),
                p99_ns: med(p99_by_round.iter().map(|(_, v)| *v)),
                p999_ns: med(phases.iter().filter_map(|(_, p)| quantile(p, 0.999, false))),
                max_ns: phases
                    .iter()
                    .filter_map(|(_, p)| quantile(p, 1.0, false))
                    .fold(0.0, f64::max),
                p99_from_sent_ns: med(phases.iter().filter_map(|(_, p)| quantile(p, 0.99, true))),
                p99_by_round,
                vs_first,
                cpu_vs_first,
                served_per_s: med(phases
                    .iter()
                    .map(|(_, p)| p.answered as f64 / (p.sent_for_ns.max(1) as f64 / 1e9))),
                faults_per_1000: med(phases.iter().map(|(_, p)| {
                    1000.0 * per_request(p, p.end.minflt.saturating_sub(p.start.minflt))
                })),
                cpu_us_per_request: med(phases.iter().map(|(_, p)| {
                    let cpu = (p.end.utime_ns + p.end.stime_ns)
                        .saturating_sub(p.start.utime_ns + p.start.stime_ns);
                    per_request(p, cpu) / 1e3
                })),
                rss_end: med(phases.iter().map(|(_, p)| p.end.rss_bytes as f64)),
                used_end: {
                    let v: Vec<f64> = phases
                        .iter()
                        .filter_map(|(_, p)| p.end.used_memory.map(|u| u as f64))
                        .collect();
                    median(&v)
                },
                send_lag_max_ns: phases
                    .iter()
                    .map(|(_, p)| p.send_lag_max_ns)
                    .max()
                    .unwrap_or(0),
                calls_per_1000: calls_per_1000(&phases),
                write_wait_max_ns: phases
                    .iter()
                    .map(|(_, p)| p.write_wait_max_ns)
                    .max()
                    .unwrap_or(0),
            });
        }
    }
    rows
}

/// Per allocator, the highest rate at which every one of its processes kept its p99
/// from the intended start under `target_ns`; None where no rate did.
pub fn highest_rate_under(rows: &[ServeRow], allocator: &str, target_ns: f64) -> Option<u64> {
    rows.iter()
        .filter(|r| r.allocator == allocator)
        .filter(|r| {
            !r.p99_by_round.is_empty() && r.p99_by_round.iter().all(|(_, v)| *v < target_ns)
        })
        .map(|r| r.rate_per_s)
        .max()
}

/// The answer, one line per finding: each rate's tail against the first allocator, the
/// corrected against the uncorrected tail, memory per held byte, and the target.
pub fn answer(record: &ServeRecord, rows: &[ServeRow], target_ns: f64) -> Vec<String> {
    use crate::fmt::{fmt_ns, group_thousands};
    let mut out = Vec::new();
    let first = record.allocators.first().map(|a| a.allocator.as_str());
    for &rate in &record.rates_per_s {
        let at: Vec<&ServeRow> = rows.iter().filter(|r| r.rate_per_s == rate).collect();
        if at.is_empty() {
            continue;
        }
        let mut parts = Vec::new();
        for r in &at {
            let against = match &r.vs_first {
                Some(c) => format!(
                    ", {}",
                    comparison_words(c, first.unwrap_or("?"), record.noise_threshold)
                ),
                None => String::new(),
            };
            parts.push(format!("{} {}{against}", r.allocator, fmt_ns(r.p99_ns)));
        }
        out.push(format!(
            "at {} requests/s, p99 from the intended start (median of {} process(es)): {}",
            group_thousands(rate as i64),
            at.iter().map(|r| r.processes).max().unwrap_or(0),
            parts.join("; ")
        ));
    }
    // CPU per request: what a throughput benchmark compares.
    if let Some(&last) = record.rates_per_s.last() {
        let cpu: Vec<String> = rows
            .iter()
            .filter(|r| r.rate_per_s == last)
            .map(|r| match &r.cpu_vs_first {
                Some(c) => format!(
                    "{} {}, {}",
                    r.allocator,
                    fmt_ns(r.cpu_us_per_request * 1e3),
                    comparison_words(c, first.unwrap_or("?"), record.noise_threshold)
                ),
                None => format!("{} {}", r.allocator, fmt_ns(r.cpu_us_per_request * 1e3)),
            })
            .collect();
        if cpu.len() > 1 {
            out.push(format!(
                "the server's CPU time per request at {} requests/s (what a throughput benchmark compares): {}",
                group_thousands(last as i64),
                cpu.join("; ")
            ));
        }
    }
    // Where the tail from the intended start is well above the tail from the sends:
    // requests went out late, and the record says whether the server held them back.
    if let Some(r) = rows
        .iter()
        .filter(|r| r.p99_from_sent_ns > 0.0)
        .max_by(|a, b| (a.p99_ns / a.p99_from_sent_ns).total_cmp(&(b.p99_ns / b.p99_from_sent_ns)))
    {
        let ratio = r.p99_ns / r.p99_from_sent_ns;
        if ratio >= 1.5 {
            let why = if r.write_wait_max_ns * 2 >= r.send_lag_max_ns {
                format!(
                    "the server stopped reading: one write of requests waited {} for room in its socket, so the requests due meanwhile went out late",
                    fmt_ns(r.write_wait_max_ns as f64)
                )
            } else {
                format!(
                    "no write waited longer than {} for the server, so the lateness was the load generator's own (its threads woke late on this host); that part of the tail is not the server's",
                    fmt_ns(r.write_wait_max_ns as f64)
                )
            };
            out.push(format!(
                "{} at {} requests/s: p99 {} from the intended start against {} from each request's write ({ratio:.1}x); requests went out up to {} after they were due: {why}",
                r.allocator,
                group_thousands(r.rate_per_s as i64),
                fmt_ns(r.p99_ns),
                fmt_ns(r.p99_from_sent_ns),
                fmt_ns(r.send_lag_max_ns as f64)
            ));
        }
    }
    // Memory per byte the server says it holds, at the end of the last rate.
    if let Some(&last) = record.rates_per_s.last() {
        let mem: Vec<String> = rows
            .iter()
            .filter(|r| r.rate_per_s == last)
            .map(|r| match r.rss_per_used() {
                Some(x) => format!(
                    "{} {:.2} ({} resident, {} used_memory)",
                    r.allocator,
                    x,
                    crate::fmt::human_bytes(r.rss_end as u64),
                    crate::fmt::human_bytes(r.used_end.unwrap_or(0.0) as u64)
                ),
                None => format!(
                    "{} {} resident (the server gave no used_memory)",
                    r.allocator,
                    crate::fmt::human_bytes(r.rss_end as u64)
                ),
            })
            .collect();
        if !mem.is_empty() {
            out.push(format!(
                "resident bytes per byte the server says it holds, after every rate's churn: {}",
                mem.join("; ")
            ));
        }
        // Over the server's life: after the fill, then after each rate's churn.
        let life: Vec<String> = record
            .allocators
            .iter()
            .filter(|a| !a.runs.is_empty())
            .map(|a| {
                let at = |pick: &Pick<'_>| {
                    let v: Vec<(u64, Option<u64>)> = a.runs.iter().filter_map(pick).collect();
                    let rss = med(v.iter().map(|(r, _)| *r as f64));
                    let used: Vec<f64> =
                        v.iter().filter_map(|(_, u)| u.map(|u| u as f64)).collect();
                    (rss, median(&used))
                };
                let mut points = vec![at(&|r| {
                    Some((r.after_fill.rss_bytes, r.after_fill.used_memory))
                })];
                for &rate in &record.rates_per_s {
                    points.push(at(&|r| {
                        r.phases
                            .iter()
                            .find(|p| p.rate_per_s == rate)
                            .map(|p| (p.end.rss_bytes, p.end.used_memory))
                    }));
                }
                let mib = |b: f64| format!("{:.0}", b / f64::from(1u32 << 20));
                let rss: Vec<String> = points.iter().map(|(r, _)| mib(*r)).collect();
                let used: Vec<String> = points
                    .iter()
                    .map(|(_, u)| u.map_or("?".into(), mib))
                    .collect();
                format!(
                    "{} {} MiB (used_memory {})",
                    a.allocator,
                    rss.join(" → "),
                    used.join(" → ")
                )
            })
            .collect();
        if !life.is_empty() {
            out.push(format!(
                "resident set over the server's life, after the fill then after each rate (median): {}",
                life.join("; ")
            ));
        }
        let mut unavailable = None;
        let faults: Vec<String> = rows
            .iter()
            .filter(|r| r.rate_per_s == last)
            .map(|r| {
                let calls = match &r.calls_per_1000 {
                    Ok(c) => format!(", {}", calls_words(c)),
                    Err(why) => {
                        unavailable.get_or_insert(why.clone());
                        String::new()
                    }
                };
                format!(
                    "{} {} faults{calls}",
                    r.allocator,
                    crate::fmt::fmt_count(r.faults_per_1000)
                )
            })
            .collect();
        let tail = match unavailable {
            Some(why) => format!("; memory syscalls not counted: {why}"),
            None => "; these count the calls made, not whether the faults landed on the pages they gave back (no addresses were recorded)".into(),
        };
        if !faults.is_empty() {
            out.push(format!(
                "per 1,000 requests at {} requests/s, the server's: {}{tail}",
                group_thousands(last as i64),
                faults.join("; ")
            ));
        }
    }
    let held: Vec<String> = record
        .allocators
        .iter()
        .filter(|a| !a.runs.is_empty())
        .map(
            |a| match highest_rate_under(rows, &a.allocator, target_ns) {
                Some(r) => format!("{} {}/s", a.allocator, group_thousands(r as i64)),
                None => format!("{} none", a.allocator),
            },
        )
        .collect();
    if !held.is_empty() {
        out.push(format!(
            "highest rate whose p99 stayed under {} in every process: {}",
            fmt_ns(target_ns),
            held.join(", ")
        ));
    }
    out
}
