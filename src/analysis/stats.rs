//! Statistics on measured values — the one place that computes medians, their confidence
//! intervals, paired ratios and verdicts. Pure: no I/O.
//!
//! The unit of replication is the worker process. A cell's figure is the median over its
//! processes; its interval is the distribution-free order-statistic interval for a
//! median: with n values sorted, `[x(k), x(n+1-k)]` covers the true median with
//! probability `1 - 2·P(B ≤ k-1)`, B ~ Binomial(n, ½), whatever the distribution (for
//! continuous values). The widest `k` whose coverage reaches the level asked for is used;
//! when even `[min, max]` cannot reach it (n ≤ 5 for 95 %), `[min, max]` is reported with
//! the coverage it has. A comparison pairs the two cells' processes of the same round
//! (interleaved rounds see the same machine state) and applies the same interval to the
//! per-round ratios. With fewer rounds than that interval needs (5 or fewer at 95 %), the
//! same processes unpaired give one ([`shift_ratio`], exact from 4 a side at 95 %): its
//! coverage and its false verdicts beside drift and two modes are simulated in the tests
//! below and measured by A/A in docs/method.md.

/// The median of `v` (mean of the middle two for an even count), None for no values.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

pub use crate::model::metric::DEFAULT_LEVEL;

/// A confidence level as people read it: "95 %", "99 %", "99.9 %".
pub fn level_text(level: f64) -> String {
    let pct = 100.0 * level;
    if (pct - pct.round()).abs() < 1e-9 {
        format!("{pct:.0} %")
    } else {
        format!("{} %", (pct * 1000.0).round() / 1000.0)
    }
}

/// Parses `--confidence` (percent, 50 to below 100) into a level.
pub fn parse_confidence(s: &str) -> Result<f64, String> {
    let pct: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number: give a percentage such as 95 or 99"))?;
    if !(50.0..100.0).contains(&pct) {
        return Err(format!(
            "{s} % is not a confidence level the lab can state: give a percentage from 50 to below 100 (default 95)"
        ));
    }
    Ok(pct / 100.0)
}

/// A confidence interval and the probability with which it covers the true value.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub coverage: f64,
}

/// P(B ≤ k) for B ~ Binomial(n, ½).
fn binomial_half_cdf(n: usize, k: usize) -> f64 {
    // ln C(n, i) built up term by term; each term is C(n, i) / 2^n.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0f64;
    let mut total = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_choose + ln_half_n).exp();
    }
    total.min(1.0)
}

/// The order-statistic confidence interval for the median of `v` at `level` (see the
/// module comment); None for fewer than two values.
pub fn median_ci(v: &[f64], level: f64) -> Option<Interval> {
    let n = v.len();
    if n < 2 {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let coverage = |k: usize| 1.0 - 2.0 * binomial_half_cdf(n, k - 1);
    let mut k = 1;
    while k < n / 2 && coverage(k + 1) >= level {
        k += 1;
    }
    Some(Interval {
        low: s[k - 1],
        high: s[n - k],
        coverage: coverage(k),
    })
}

/// The coverage [`median_ci`] reaches at `level` with `n` values (None below two).
pub fn coverage(n: usize, level: f64) -> Option<f64> {
    let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
    median_ci(&v, level).map(|ci| ci.coverage)
}

/// What a comparison says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The whole interval of new/base lies below 1 - threshold.
    Faster,
    /// The whole interval lies above 1 + threshold.
    Slower,
    /// The interval reaches inside ±threshold.
    NoSignificantDifference,
    /// Too few rounds: no interval reaches the stated coverage ([`level`]), so no
    /// verdict either way (see [`rounds_needed`]).
    Undecided,
}

impl Verdict {
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::Undecided => "undecided",
        }
    }
}

/// A ratio new/base from paired values, with its interval and verdict (None without an
/// interval: fewer than two pairs).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub ratio: f64,
    pub interval: Option<Interval>,
    pub pairs: usize,
    pub verdict: Option<Verdict>,
    /// The confidence level the interval was made at and the verdict asked of it.
    #[serde(skip)]
    pub level: f64,
    /// The interval is the unpaired one over the two sides' processes (too few rounds
    /// for the paired one to reach the level); the ratio is then its estimate.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unpaired: bool,
}

/// Compares `pairs` of (base, new) values measured side by side (one pair per round):
/// the median of the per-pair ratios new/base, its interval, and a verdict against a
/// noise `threshold` (0.02 = ±2 %). With too few pairs for that interval to reach
/// `level` (5 or fewer at 95 %), the two sides' values unpaired give the ratio and an
/// interval that can ([`shift_ratio`], from 4 a side at 95 %). None without a pair with
/// a positive base.
pub fn compare_paired(pairs: &[(f64, f64)], threshold: f64, level: f64) -> Option<Comparison> {
    let kept: Vec<(f64, f64)> = pairs.iter().copied().filter(|(b, _)| *b > 0.0).collect();
    let ratios: Vec<f64> = kept.iter().map(|(base, new)| new / base).collect();
    let ratio = median(&ratios)?;
    let interval = median_ci(&ratios, level);
    let reaches = |ci: &Interval| ci.coverage >= level - 1e-12;
    if !interval.as_ref().is_some_and(reaches) {
        let (base, new): (Vec<f64>, Vec<f64>) = kept.iter().copied().unzip();
        if let Some((ratio, ci)) = shift_ratio(&base, &new, level).filter(|(_, ci)| reaches(ci)) {
            return Some(Comparison {
                ratio,
                interval: Some(ci),
                pairs: ratios.len(),
                verdict: Some(verdict(ci, threshold, level)),
                level,
                unpaired: true,
            });
        }
    }
    let verdict = interval.map(|ci| verdict(ci, threshold, level));
    Some(Comparison {
        ratio,
        interval,
        pairs: ratios.len(),
        verdict,
        level,
        unpaired: false,
    })
}

/// P(U ≤ u) for u = 0..=m·n, U the Mann–Whitney statistic of two independent samples of
/// m and n values from one continuous distribution (exact: arrangements counted by
/// recursion; every one of the C(m+n, m) orders is equally likely).
fn mann_whitney_cdf(m: usize, n: usize) -> Vec<f64> {
    // counts[j][u]: orders of i values of the first sample among j of the second with
    // U = u, built up over i (the recursion f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u)).
    let mut prev: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect();
    for i in 1..=m {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        for j in 0..=n {
            let mut c = vec![0.0; i * j + 1];
            for (u, slot) in c.iter_mut().enumerate() {
                if u >= j {
                    *slot += prev[j].get(u - j).copied().unwrap_or(0.0);
                }
                if j > 0 {
                    *slot += cur[j - 1].get(u).copied().unwrap_or(0.0);
                }
            }
            cur.push(c);
        }
        prev = cur;
    }
    let counts = &prev[n];
    let total: f64 = counts.iter().sum();
    let mut acc = 0.0;
    counts
        .iter()
        .map(|c| {
            acc += c;
            acc / total
        })
        .collect()
}

/// The ratio new/base of two independent sets of positive values (separate processes,
/// not paired rounds): the Hodges–Lehmann estimate of the shift of their logarithms (the
/// median of every difference log new − log base) and its distribution-free interval from
/// the Mann–Whitney statistic, the widest reaching `level` — or, when even the outermost
/// differences do not, those with the coverage they have. None for an empty side.
/// (Exact up to 2,500 pairs of values; beyond, the normal approximation of U.)
pub fn shift_ratio(base: &[f64], new: &[f64], level: f64) -> Option<(f64, Interval)> {
    let lb: Vec<f64> = base.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
    let ln: Vec<f64> = new.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
    let (m, n) = (lb.len(), ln.len());
    if m == 0 || n == 0 {
        return None;
    }
    let mut d: Vec<f64> = lb
        .iter()
        .flat_map(|b| ln.iter().map(move |x| x - b))
        .collect();
    d.sort_by(f64::total_cmp);
    let estimate = median(&d)?;
    let mn = m * n;
    // P(U ≤ k-1) for the interval [d_(k), d_(mn-k+1)] (1-based).
    let exact = (mn <= 2500).then(|| mann_whitney_cdf(m, n));
    let (mf, nf) = (m as f64, n as f64);
    let lower_tail = |k: usize| match (&exact, k) {
        (_, 0) => 0.0,
        (Some(cdf), k) => cdf[k - 1],
        (None, k) => {
            normal_cdf((k as f64 - 0.5 - mf * nf / 2.0) / (mf * nf * (mf + nf + 1.0) / 12.0).sqrt())
        }
    };
    let coverage = |k: usize| (1.0 - 2.0 * lower_tail(k)).max(0.0);
    let mut k = 1;
    while k < mn.div_ceil(2) && coverage(k + 1) >= level {
        k += 1;
    }
    Some((
        estimate.exp(),
        Interval {
            low: d[k - 1].exp(),
            high: d[mn - k].exp(),
            coverage: coverage(k),
        },
    ))
}

/// Φ⁻¹(p), the standard normal quantile, by bisection on [`normal_cdf`] (to 1e-9;
/// p in (0, 1)).
pub fn normal_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-10.0f64, 10.0f64);
    while hi - lo > 1e-9 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Φ(x), the standard normal distribution function (Abramowitz–Stegun 7.1.26 for erf,
/// error below 1.5e-7).
fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// What `n` rounds (or processes) can support, when it is less than a verdict needs:
/// "with 3 rounds an interval covers only 90.0 %: no verdict below 95 % (4 rounds give
/// it)"; None when `n` reaches `level`.
pub fn too_few(n: usize, what: &str, level: f64) -> Option<String> {
    let reached = decidable_coverage(n, level);
    (reached < level - 1e-12).then(|| {
        format!(
            "with {n} {what} an interval covers only {:.1} %: no verdict below {} ({} {what} give it)",
            100.0 * reached,
            level_text(level),
            rounds_to_decide(level)
        )
    })
}

/// The fewest paired rounds whose median interval reaches `level` (6 for 95 %).
pub fn rounds_needed(level: f64) -> usize {
    (2..)
        .find(|&n| coverage(n, level).is_some_and(|c| c >= level))
        .unwrap_or(usize::MAX)
}

/// The coverage `n` rounds of two cells can reach at `level`: the paired interval's,
/// or the unpaired one's over the 2·n processes where that is higher.
pub fn decidable_coverage(n: usize, level: f64) -> f64 {
    let v: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
    let w: Vec<f64> = v.iter().map(|x| x * 1.5).collect();
    let paired = coverage(n, level).unwrap_or(0.0);
    let unpaired = shift_ratio(&v, &w, level).map_or(0.0, |(_, ci)| ci.coverage);
    paired.max(unpaired)
}

/// The fewest rounds that can decide a comparison at `level`, either way
/// ([`compare_paired`]): 4 for 95 %, 5 for 99 %.
pub fn rounds_to_decide(level: f64) -> usize {
    (2..64)
        .find(|&n| decidable_coverage(n, level) >= level - 1e-12)
        .unwrap_or_else(|| rounds_needed(level))
}

/// Significant only when an interval of at least the coverage asked for (`level`) lies
/// wholly beyond ±threshold; an interval of less coverage (too few rounds) decides
/// nothing.
pub fn verdict(ci: Interval, threshold: f64, level: f64) -> Verdict {
    // A hair of tolerance: an interval computed at exactly the level asked for.
    if ci.coverage < level - 1e-12 {
        Verdict::Undecided
    } else if ci.low > 1.0 + threshold {
        Verdict::Slower
    } else if ci.high < 1.0 - threshold {
        Verdict::Faster
    } else {
        Verdict::NoSignificantDifference
    }
}

/// The interval's half-width relative to `center`, in percent (the larger side).
pub fn half_width_pct(center: f64, ci: Interval) -> f64 {
    if center <= 0.0 {
        return 0.0;
    }
    100.0 * (ci.high - center).max(center - ci.low) / center
}

pub use crate::model::random::SplitMix;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mann_whitney_interval_has_its_stated_coverage() {
        // Known values: m = n = 6, U ≤ 5 has probability 0.0206 (tables), so the
        // interval is the 6th smallest and 6th largest of the 36 differences, 95.9 %.
        let cdf = mann_whitney_cdf(6, 6);
        assert!((cdf[5] - 0.020_562).abs() < 1e-5, "{}", cdf[5]);
        assert!((cdf[36] - 1.0).abs() < 1e-12);
        let base: Vec<f64> = (1..=6).map(|i| 100.0 + i as f64).collect();
        let new: Vec<f64> = base.iter().map(|b| 2.0 * b).collect();
        let (ratio, ci) = shift_ratio(&base, &new, DEFAULT_LEVEL).unwrap();
        assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
        assert!(
            ci.low < 2.0 && 2.0 < ci.high && ci.coverage >= DEFAULT_LEVEL,
            "{ci:?}"
        );
        assert!((ci.coverage - (1.0 - 2.0 * cdf[5])).abs() < 1e-12);
        // The stated coverage holds: A/A draws from one distribution contain ratio 1
        // at least that often (SplitMix noise, 2,000 trials of 6 + 6 values).
        let mut rng = SplitMix(11);
        let mut draw = || 1.0 + (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let trials = 2000;
        let mut covered = 0;
        for _ in 0..trials {
            let b: Vec<f64> = (0..6).map(|_| draw()).collect();
            let n: Vec<f64> = (0..6).map(|_| draw()).collect();
            let (_, ci) = shift_ratio(&b, &n, DEFAULT_LEVEL).unwrap();
            covered += usize::from(ci.low <= 1.0 && 1.0 <= ci.high);
        }
        assert!(
            covered as f64 / trials as f64 >= 0.94,
            "{covered} of {trials}"
        );
        // The normal approximation agrees with the exact tail where both apply.
        let (m, n) = (40.0f64, 40.0f64);
        let approx =
            normal_cdf((600.0 - 0.5 - m * n / 2.0) / (m * n * (m + n + 1.0) / 12.0).sqrt());
        let exact = mann_whitney_cdf(40, 40)[599];
        assert!((approx - exact).abs() < 0.005, "{approx} vs {exact}");
    }

    #[test]
    fn a_confidence_level_is_a_percentage_from_50_to_below_100() {
        assert_eq!(parse_confidence("99"), Ok(0.99));
        assert_eq!(parse_confidence(" 90 % "), Ok(0.9));
        for bad in ["100", "49.9", "abc", "", "NaN", "inf"] {
            assert!(parse_confidence(bad).is_err(), "{bad}");
        }
        // 99 % needs 8 rounds ([min, max] of 7 covers 98.4 %), 90 % needs 5.
        assert_eq!(rounds_needed(0.99), 8);
        assert_eq!(rounds_needed(0.90), 5);
    }

    #[test]
    fn too_few_rounds_decide_nothing() {
        assert_eq!(rounds_needed(DEFAULT_LEVEL), 6);
        assert_eq!(rounds_to_decide(DEFAULT_LEVEL), 4);
        assert_eq!(rounds_to_decide(0.99), 5);
        assert_eq!(rounds_to_decide(0.90), 3);
        // Three rounds, each new twice as slow: neither interval reaches 95 % (the
        // unpaired one's [min, max] of 9 differences covers 90 %).
        let pairs: Vec<(f64, f64)> = (1..=3).map(|i| (i as f64, 2.0 * i as f64)).collect();
        let c = compare_paired(&pairs, 0.02, DEFAULT_LEVEL).unwrap();
        assert_eq!(c.verdict, Some(Verdict::Undecided), "{c:?}");
        assert!(too_few(3, "rounds", DEFAULT_LEVEL)
            .unwrap()
            .contains("(4 rounds give it)"));
        assert_eq!(too_few(4, "rounds", DEFAULT_LEVEL), None);
        // Four rounds of a large effect decide it, unpaired: every new value lies above
        // every base value.
        let pairs: Vec<(f64, f64)> = (1..=4).map(|i| (i as f64, 20.0 + i as f64)).collect();
        let c = compare_paired(&pairs, 0.02, DEFAULT_LEVEL).unwrap();
        assert_eq!(c.verdict, Some(Verdict::Slower), "{c:?}");
        assert!(c.unpaired && c.interval.unwrap().coverage >= DEFAULT_LEVEL);
        // Six rounds: the paired interval, as before.
        let pairs: Vec<(f64, f64)> = (1..=6).map(|i| (i as f64, 2.0 * i as f64)).collect();
        let c = compare_paired(&pairs, 0.02, DEFAULT_LEVEL).unwrap();
        assert_eq!(c.verdict, Some(Verdict::Slower));
        assert!(!c.unpaired);
    }

    /// Rounds as this host makes them: a drift shared by the round's processes (a random
    /// walk, 8 % a round), two modes 35 % apart (a process in the slow one with
    /// probability 0.35) and 4 % of process noise; `ratio` the true effect.
    fn host_rounds(rng: &mut SplitMix, rounds: usize, ratio: f64) -> Vec<(f64, f64)> {
        let mut uniform = || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let mut drift = 0.0f64;
        let process = |u: f64, m: f64| {
            (if m < 0.35 { 1.35f64.ln() } else { 0.0 }) + 0.04 * normal_quantile(u)
        };
        (0..rounds)
            .map(|_| {
                drift += 0.08 * normal_quantile(uniform());
                let b = (drift + process(uniform(), uniform())).exp();
                let n = ratio * (drift + process(uniform(), uniform())).exp();
                (b, n)
            })
            .collect()
    }

    #[test]
    fn the_small_round_interval_covers_and_rarely_decides_wrongly_on_this_hosts_noise() {
        // The unpaired interval stands in for the paired one at 4 and 5 rounds: on
        // simulated rounds with this host's drift and two modes, it covers the true
        // ratio at least at its level, gives at most 5 % false verdicts by A/A, and
        // decides a large effect every time.
        let mut rng = SplitMix(2026);
        let trials = 1500;
        for rounds in [4, 5] {
            let (mut covered, mut false_verdicts, mut decided) = (0, 0, 0);
            for _ in 0..trials {
                let c = compare_paired(&host_rounds(&mut rng, rounds, 1.3), 0.02, DEFAULT_LEVEL)
                    .unwrap();
                assert!(c.unpaired);
                let ci = c.interval.unwrap();
                covered += usize::from(ci.low <= 1.3 && 1.3 <= ci.high);
                let aa = compare_paired(&host_rounds(&mut rng, rounds, 1.0), 0.02, DEFAULT_LEVEL)
                    .unwrap();
                false_verdicts += usize::from(matches!(
                    aa.verdict,
                    Some(Verdict::Faster | Verdict::Slower)
                ));
                let big = compare_paired(&host_rounds(&mut rng, rounds, 20.0), 0.02, DEFAULT_LEVEL)
                    .unwrap();
                decided += usize::from(big.verdict == Some(Verdict::Slower));
            }
            let cover = covered as f64 / trials as f64;
            let false_rate = false_verdicts as f64 / trials as f64;
            eprintln!("{rounds} rounds: coverage {cover}, A/A false verdicts {false_rate}");
            assert!(
                cover >= DEFAULT_LEVEL - 0.01,
                "{rounds} rounds: coverage {cover}"
            );
            assert!(
                false_rate <= 0.05,
                "{rounds} rounds: A/A false verdicts {false_rate}"
            );
            assert_eq!(decided, trials, "{rounds} rounds");
        }
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn binomial_tail_matches_hand_computed_values() {
        assert!((binomial_half_cdf(5, 0) - 1.0 / 32.0).abs() < 1e-12);
        assert!((binomial_half_cdf(6, 1) - 7.0 / 64.0).abs() < 1e-12);
        assert!((binomial_half_cdf(10, 10) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn median_interval_uses_the_right_order_statistics() {
        // n = 6: [min, max] covers with 1 - 2/64 = 96.9 %; the next one in, 78.1 %.
        let ci = median_ci(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0], 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 6.0));
        assert!((ci.coverage - 62.0 / 64.0).abs() < 1e-12);
        // n = 5 cannot reach 95 %: [min, max] at 93.75 %, said as such.
        let ci = median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (1.0, 5.0));
        assert!((ci.coverage - 0.9375).abs() < 1e-12);
        // n = 20: the 6th and 15th values (coverage 95.9 %).
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        let ci = median_ci(&v, 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (6.0, 15.0));
        assert!(ci.coverage >= 0.95 && ci.coverage < 0.97, "{ci:?}");
        assert_eq!(median_ci(&[1.0], 0.95), None);
    }

    #[test]
    fn the_interval_covers_the_median_as_often_as_it_says() {
        // Many samples from a skewed distribution with a known median (exp(U·2), median
        // e^1): the share of intervals that contain it is the stated coverage.
        let mut rng = SplitMix(7);
        let true_median = 1f64.exp();
        for n in [5usize, 6, 9, 20] {
            let trials = 20_000;
            let mut covered = 0;
            let mut stated = 0.0;
            for _ in 0..trials {
                let v: Vec<f64> = (0..n)
                    .map(|_| ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0).exp())
                    .collect();
                let ci = median_ci(&v, 0.95).unwrap();
                stated = ci.coverage;
                covered += usize::from(ci.low <= true_median && true_median <= ci.high);
            }
            let seen = covered as f64 / trials as f64;
            assert!((seen - stated).abs() < 0.01, "n={n}: {seen} vs {stated}");
        }
    }

    #[test]
    fn verdicts_for_clearly_different_and_identical_samples() {
        // New is twice the base in every round: slower, interval around 2.
        let slower: Vec<(f64, f64)> = (0..6)
            .map(|i| (100.0 + i as f64, 200.0 + 2.0 * i as f64))
            .collect();
        let c = compare_paired(&slower, 0.02, DEFAULT_LEVEL).unwrap();
        assert_eq!(c.verdict, Some(Verdict::Slower));
        assert!((c.ratio - 2.0).abs() < 1e-9 && c.pairs == 6);
        // Half the time: faster.
        let faster: Vec<(f64, f64)> = slower.iter().map(|(b, n)| (*n, *b)).collect();
        assert_eq!(
            compare_paired(&faster, 0.02, DEFAULT_LEVEL)
                .unwrap()
                .verdict,
            Some(Verdict::Faster)
        );
        // Identical up to ±1 % noise: no significant difference.
        let same: Vec<(f64, f64)> = [1.0, 0.99, 1.01, 1.0, 0.995, 1.005]
            .iter()
            .map(|f| (100.0, 100.0 * f))
            .collect();
        assert_eq!(
            compare_paired(&same, 0.02, DEFAULT_LEVEL).unwrap().verdict,
            Some(Verdict::NoSignificantDifference)
        );
        // A 5 % effect whose interval reaches inside ±2 % is not called significant.
        let unsure: Vec<(f64, f64)> = [1.05, 1.01, 1.06, 1.05, 1.04, 1.07]
            .iter()
            .map(|f| (100.0, 100.0 * f))
            .collect();
        assert_eq!(
            compare_paired(&unsure, 0.02, DEFAULT_LEVEL)
                .unwrap()
                .verdict,
            Some(Verdict::NoSignificantDifference)
        );
        // One pair: a ratio, no interval, no verdict.
        let one = compare_paired(&[(100.0, 150.0)], 0.02, DEFAULT_LEVEL).unwrap();
        assert_eq!((one.ratio, one.interval, one.verdict), (1.5, None, None));
        assert!(compare_paired(&[], 0.02, DEFAULT_LEVEL).is_none());
    }

    #[test]
    fn shuffles_are_permutations_fixed_by_the_seed() {
        let mut a: Vec<u32> = (0..12).collect();
        let mut b = a.clone();
        SplitMix(42).shuffle(&mut a);
        SplitMix(42).shuffle(&mut b);
        assert_eq!(a, b);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..12).collect::<Vec<_>>());
        let mut c: Vec<u32> = (0..12).collect();
        SplitMix(43).shuffle(&mut c);
        assert_ne!(a, c);
    }
}
