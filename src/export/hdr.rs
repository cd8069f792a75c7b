//! HdrHistogram's `outputPercentileDistribution`, in its text (`.hgrm`) and CSV forms,
//! byte-for-byte in HdrHistogram's layout so that existing HdrHistogram plotters read the
//! files unchanged: five ticks per half-distance, percentiles as fractions, the last CSV
//! row ending in `Infinity`, and the `#[Mean …]`, `#[Max …]`, `#[Buckets …]` footer.

use crate::model::percentiles;
use hdrhistogram::Histogram;
use std::fmt::Write as _;

/// Ticks per half-distance, as in HdrHistogram's examples and the lab's files.
pub const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// One row of the percentile distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// Highest value equivalent to the value iterated to, divided by the scaling ratio.
    pub value: f64,
    /// Percentile as a fraction (0.5 is the median).
    pub quantile: f64,
    pub total_count: u64,
}

/// The rows HdrHistogram prints, values divided by `scaling` (1000 turns ns into µs):
/// the reference implementation's percentile steps ([`percentiles::steps`]).
pub fn rows(h: &Histogram<u64>, scaling: f64) -> Vec<Row> {
    percentiles::steps(h, TICKS_PER_HALF_DISTANCE)
        .into_iter()
        .map(|s| Row {
            value: s.value as f64 / scaling,
            quantile: s.percent / 100.0,
            total_count: s.total_count,
        })
        .collect()
}

/// The mean as HdrHistogram's reference (Java `getMean`) computes it: the sum of every
/// recorded value's median equivalent times its count, then divided by the total count.
/// (The Rust crate divides each term first, which can move the last bit, and with it the
/// printed third decimal.)
fn reference_mean(h: &Histogram<u64>) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let total: f64 = h
        .iter_recorded()
        .map(|v| h.median_equivalent(v.value_iterated_to()) as f64 * v.count_at_value() as f64)
        .sum();
    total / h.len() as f64
}

/// The standard deviation as the reference (Java `getStdDeviation`) computes it around
/// `mean`.
fn reference_stdev(h: &Histogram<u64>, mean: f64) -> f64 {
    if h.is_empty() {
        return 0.0;
    }
    let total: f64 = h
        .iter_recorded()
        .map(|v| {
            let d = h.median_equivalent(v.value_iterated_to()) as f64 - mean;
            d * d * v.count_since_last_iteration() as f64
        })
        .sum();
    (total / h.len() as f64).sqrt()
}

/// `v` with `decimals` digits after the point as Java's `Formatter` prints `%.Nf`, which
/// the reference's tools print with: the shortest decimal that reads back as `v`, rounded
/// half up (Rust's `{:.N}` rounds the exact binary value, so 0.5255 prints 0.525 there
/// and 0.526 in Java).
pub fn java_fixed(v: f64, decimals: usize) -> String {
    let shortest = format!("{}", v.abs());
    let (int, frac) = shortest.split_once('.').unwrap_or((&shortest, ""));
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    let point = int.len();
    let keep = point + decimals;
    let up = digits.get(keep).is_some_and(|d| *d >= 5);
    digits.resize(keep, 0);
    if up {
        let mut i = keep;
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let point = digits.len() - decimals;
    let text: String = digits.iter().map(|d| char::from(b'0' + d)).collect();
    let (i, f) = text.split_at(point);
    let sign = if v.is_sign_negative() && digits.iter().any(|d| *d != 0) {
        "-"
    } else {
        ""
    };
    if decimals == 0 {
        format!("{sign}{i}")
    } else {
        format!("{sign}{i}.{f}")
    }
}

/// HdrHistogram's sub-bucket count: 2^ceil(log2(2 × 10^sigfig)).
fn sub_bucket_count(sigfig: u8) -> u64 {
    let largest = 2 * 10u64.pow(u32::from(sigfig));
    largest.next_power_of_two()
}

/// The text form (`.hgrm`).
pub fn text(h: &Histogram<u64>, scaling: f64) -> String {
    let sd = usize::from(h.sigfig());
    let mut out = String::new();
    let _ = write!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for r in rows(h, scaling) {
        if r.quantile < 1.0 {
            let _ = writeln!(
                out,
                "{:12.sd$} {:2.12} {:10} {:14.2}",
                r.value,
                r.quantile,
                r.total_count,
                1.0 / (1.0 - r.quantile)
            );
        } else {
            let _ = writeln!(
                out,
                "{:12.sd$} {:2.12} {:10}",
                r.value, r.quantile, r.total_count
            );
        }
    }
    let mean = reference_mean(h);
    let _ = writeln!(
        out,
        "#[Mean    = {:>12}, StdDeviation   = {:>12}]",
        java_fixed(mean / scaling, sd),
        java_fixed(reference_stdev(h, mean) / scaling, sd)
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.sd$}, Total count    = {:12}]",
        h.max() as f64 / scaling,
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        sub_bucket_count(h.sigfig())
    );
    out
}

/// The CSV form.
pub fn csv(h: &Histogram<u64>, scaling: f64) -> String {
    let sd = usize::from(h.sigfig());
    let mut out = String::from("\"Value\",\"Percentile\",\"TotalCount\",\"1/(1-Percentile)\"\n");
    for r in rows(h, scaling) {
        if r.quantile < 1.0 {
            let _ = writeln!(
                out,
                "{:.sd$},{:.12},{},{:.2}",
                r.value,
                r.quantile,
                r.total_count,
                1.0 / (1.0 - r.quantile)
            );
        } else {
            let _ = writeln!(
                out,
                "{:.sd$},{:.12},{},Infinity",
                r.value, r.quantile, r.total_count
            );
        }
    }
    out
}

/// A CSV percentile distribution read back: (value, quantile, total count) per row.
pub fn parse_csv(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines();
    if lines.next() != Some("\"Value\",\"Percentile\",\"TotalCount\",\"1/(1-Percentile)\"") {
        return Err("not an HdrHistogram percentile CSV (header differs)".into());
    }
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            if cells.len() != 4 {
                return Err(format!("row '{l}' does not have 4 cells"));
            }
            let num = |s: &str| s.parse::<f64>().map_err(|e| format!("'{s}' in '{l}': {e}"));
            Ok(Row {
                value: num(cells[0])?,
                quantile: num(cells[1])?,
                total_count: cells[2]
                    .parse()
                    .map_err(|e| format!("'{}' in '{l}': {e}", cells[2]))?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Java's %.Nf: the shortest decimal of the double, rounded half up.
    #[test]
    fn fixed_decimals_round_as_javas_formatter_does() {
        assert_eq!(format!("{:.3}", 0.5255), "0.525");
        assert_eq!(java_fixed(0.5255, 3), "0.526");
        assert_eq!(java_fixed(0.125, 2), "0.13");
        assert_eq!(java_fixed(2.5, 0), "3");
        assert_eq!(java_fixed(9.9996, 3), "10.000");
        assert_eq!(java_fixed(18399.231, 3), "18399.231");
        assert_eq!(java_fixed(0.0, 3), "0.000");
        assert_eq!(java_fixed(-1.005, 2), "-1.01");
        assert_eq!(java_fixed(0.04, 3), "0.040");
    }
    use crate::worker::measure::new_histogram;

    fn sample() -> Histogram<u64> {
        // 10,000 values around 1.3 µs with a long tail, like the reference's data.
        let mut h = new_histogram();
        let mut x: u64 = 12345;
        for i in 0..10_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = 1000 + (x >> 33) % 2000 + if i % 1000 == 0 { 250_000 } else { 0 };
            h.record(v).unwrap();
        }
        h
    }

    const REFERENCE: &str = include_str!("../../tests/data/hdrhistogram-java-output.txt");

    #[test]
    fn text_form_has_the_reference_layout() {
        let ours = text(&sample(), 1000.0);
        let reference: Vec<&str> = REFERENCE.lines().filter(|l| !l.starts_with("# ")).collect();
        let ours: Vec<&str> = ours.lines().collect();
        // Header and blank line are identical.
        assert_eq!(ours[0], reference[0]);
        assert_eq!(ours[1], "");
        // Every row and footer line has the reference's shape: same length, same
        // positions of the separators.
        let shape = |l: &str| -> Vec<usize> {
            l.char_indices()
                .filter(|(_, c)| *c == ' ' || *c == '.' || *c == ',' || *c == '=')
                .map(|(i, _)| i)
                .collect()
        };
        let ref_row = reference[2];
        let ref_last = reference
            .iter()
            .find(|l| l.contains(" 1.000000000000 "))
            .unwrap();
        let ref_footer: Vec<&&str> = reference.iter().filter(|l| l.starts_with("#[")).collect();
        assert_eq!(ours[2].len(), ref_row.len());
        let last = ours
            .iter()
            .find(|l| l.contains(" 1.000000000000 "))
            .unwrap();
        assert_eq!(last.len(), ref_last.len());
        let footer: Vec<&&str> = ours.iter().filter(|l| l.starts_with("#[")).collect();
        assert_eq!(footer.len(), 3);
        for (o, r) in footer.iter().zip(&ref_footer) {
            assert_eq!(shape(o), shape(r), "{o}\n{r}");
        }
        assert!(
            footer[2].contains("Buckets =           32, SubBuckets     =         2048"),
            "{}",
            footer[2]
        );
    }

    #[test]
    fn csv_parses_back_and_agrees_with_the_histogram() {
        let h = sample();
        let text = csv(&h, 1.0);
        assert!(text.lines().last().unwrap().ends_with(",Infinity"));
        let rows = parse_csv(&text).unwrap();
        assert!(rows.windows(2).all(|w| w[0].quantile <= w[1].quantile
            && w[0].value <= w[1].value
            && w[0].total_count <= w[1].total_count));
        let last = rows.last().unwrap();
        assert_eq!(last.total_count, h.len());
        assert_eq!(last.quantile, 1.0);
        assert_eq!(last.value as u64, h.highest_equivalent(h.max()));
        for r in &rows {
            // Each row's value is the histogram's value at that percentile.
            let v = percentiles::value_at(&h, 100.0 * r.quantile.min(1.0));
            assert!(
                h.equivalent(r.value as u64, v) || r.value as u64 >= v,
                "{r:?} vs {v}"
            );
        }
        assert!(parse_csv("Value,Percentile\n").is_err());
    }
}
