//! Percentiles as HdrHistogram's reference implementation (Java, the format's own)
//! defines them — the lab's one definition, for the workers' p50 … p99.9 and every
//! percentile file (`.us.hgrm`, `.us.csv`) alike, so that the files equal what
//! `HistogramLogProcessor` prints from the same `.ns.hlog`.
//!
//! The `hdrhistogram` crate differs from the reference in both: its quantile iterator
//! steps in fractions (0.1 + 0.1 + 0.1 is 0.30000000000000004), giving the next sample
//! up where a level falls exactly on one (the 4th of 10 samples at 30 %), and its
//! `value_at_quantile` takes ⌈q × total⌉ without stepping q down first (0.07 × 100 is
//! 7.000000000000001: the 8th of 100 samples).

use hdrhistogram::Histogram;

/// One step of the reference's percentile distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The highest value equivalent to the value the step stopped at.
    pub value: u64,
    /// The percentile level reported (0 to 100).
    pub percent: f64,
    /// Samples up to and including that value.
    pub total_count: u64,
}

/// The reference's `PercentileIterator` (what `outputPercentileDistribution` prints),
/// step by step:
///
/// * levels are percents, starting at 0, each step adding `100 / ticks` with
///   `ticks = ticks_per_half_distance × 2^(⌊log2(100 / (100 − level))⌋ + 1)`;
/// * a value reports every level its cumulative percent (`100 × count to it / total`)
///   has reached (`>=`) while samples remain beyond it; the value that reaches the last
///   sample reports one level, and then one more step gives it at 100 %.
pub fn steps(h: &Histogram<u64>, ticks_per_half_distance: u32) -> Vec<Step> {
    let total = h.len();
    let mut out = Vec::new();
    if total == 0 {
        return out;
    }
    let ticks_half = f64::from(ticks_per_half_distance);
    let mut level = 0.0f64;
    let mut cumulative = 0u64;
    let mut last = 0u64;
    for v in h.iter_recorded() {
        cumulative += v.count_at_value();
        last = v.value_iterated_to();
        loop {
            let current = (100.0 * cumulative as f64) / total as f64;
            if current < level {
                break;
            }
            out.push(Step {
                value: last,
                percent: level,
                total_count: cumulative,
            });
            let halvings = ((100.0 / (100.0 - level)).ln() / 2f64.ln()) as i64 + 1;
            level += 100.0 / (ticks_half * 2f64.powi(halvings as i32));
            // Every sample reached: the reference's iteration has no next step but the
            // last one, at 100 %.
            if cumulative >= total {
                break;
            }
        }
    }
    out.push(Step {
        value: last,
        percent: 100.0,
        total_count: total,
    });
    out
}

/// The value at `percentile` (0 to 100) as the reference gives it (`getValueAtPercentile`):
/// the highest value equivalent to the first one whose cumulative count reaches
/// ⌈p/100 × total⌉ (at least 1), p taken one step below itself so that a level falling
/// exactly on a sample is that sample. 0 for an empty histogram.
pub fn value_at(h: &Histogram<u64>, percentile: f64) -> u64 {
    let total = h.len();
    if total == 0 {
        return 0;
    }
    let requested = next_down(percentile).clamp(0.0, 100.0);
    let at = ((requested / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut cumulative = 0u64;
    for v in h.iter_recorded() {
        cumulative += v.count_at_value();
        if cumulative >= at {
            return v.value_iterated_to();
        }
    }
    h.highest_equivalent(h.max())
}

/// The largest double below `x` (Java's `Math.nextAfter(x, -∞)`).
fn next_down(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        x
    } else if x == 0.0 {
        -f64::from_bits(1)
    } else if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    /// Ten samples 1..=10: the level 30 % falls exactly on the 3rd, and the reference
    /// reports the 3rd there (the crate's iterator and value_at_quantile give the 4th);
    /// 90 % is the 9th, not the maximum.
    #[test]
    fn a_level_on_a_sample_is_that_sample() {
        let h = of(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(value_at(&h, 30.0), 3);
        assert_eq!(value_at(&h, 90.0), 9);
        assert_eq!(value_at(&h, 50.0), 5);
        assert_eq!(value_at(&h, 100.0), 10);
        assert_eq!(value_at(&h, 0.0), 1);
        let crates = h
            .iter_quantiles(5)
            .find(|v| (v.quantile_iterated_to() - 0.3).abs() < 1e-9)
            .map(|v| v.value_iterated_to());
        assert_eq!(crates, Some(4), "the crate's own iterator differs");
        let hundred: Vec<u64> = (1..=100).collect();
        let h100 = of(&hundred);
        assert_eq!(value_at(&h100, 7.0), 7);
        assert_eq!(h100.value_at_quantile(0.07), 8, "the crate's own differs");
        let s = steps(&h, 5);
        let at = |p: f64| {
            s.iter()
                .find(|x| (x.percent - p).abs() < 1e-9)
                .map(|x| x.value)
        };
        assert_eq!(at(0.0), Some(1));
        assert_eq!(at(30.0), Some(3));
        assert_eq!(at(90.0), Some(9));
        let last = s.last().unwrap();
        assert_eq!(
            (last.value, last.percent, last.total_count),
            (10, 100.0, 10)
        );
        // Levels and counts never go down; the last value is reported twice (at its
        // level and at 100 %).
        assert!(s.windows(2).all(|w| w[0].percent < w[1].percent
            && w[0].value <= w[1].value
            && w[0].total_count <= w[1].total_count));
        assert_eq!(s[s.len() - 2].value, 10);
    }

    /// Four runs (exec's p75 of 4 runs): the 3rd, not the maximum.
    #[test]
    fn the_75th_percentile_of_four_is_the_third() {
        let h = of(&[100, 200, 300, 400]);
        assert_eq!(value_at(&h, 75.0), 300);
        let s = steps(&h, 5);
        assert_eq!(
            s.iter().find(|x| x.percent == 75.0).map(|x| x.value),
            Some(300)
        );
    }

    #[test]
    fn an_empty_histogram_has_no_steps() {
        let h = of(&[]);
        assert!(steps(&h, 5).is_empty());
        assert_eq!(value_at(&h, 50.0), 0);
    }
}
